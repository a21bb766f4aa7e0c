// What the app tells the window about itself, as the Settings tests start from it.
import type { AppInfo } from '../api';

export function settingsInfo(): AppInfo {
  return {
    version: '0', data_dir: '/d', fingerprint: 'f', public_key: 'ab'.repeat(32), keystore: 'os', waiting: 0, welcome: false,
    unkept: { refusals: 0, knocks: 0 },
    status: { listening: null, watching: null, error: null, uamp: null },
    settings: { port: 7777, watch_dir: '/w', uamp_port: 7778 },
  } as unknown as AppInfo;
}
