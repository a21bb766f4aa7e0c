// An export says what it did beside its buttons (not at the top of Settings, out of view),
// and says nothing when the user closed the file chooser.
import { vi } from 'vitest';

let chosen: string | null = '/home/ana/gatehouse-audit.json';
vi.mock('@tauri-apps/api/core', () => ({
  invoke: (cmd: string) => {
    if (cmd === 'pick_path') return Promise.resolve(chosen);
    if (cmd === 'export_json') return Promise.resolve(42);
    return Promise.reject({ code: 'INTERNAL', message: `unmocked ${cmd}` });
  },
}));
vi.mock('@tauri-apps/api/event', () => ({ listen: () => Promise.resolve(() => {}) }));

import { SettingsView } from './settings';
import { replace } from '../dom';
import { settingsInfo } from './settings.fixture';

test('an export’s confirmation is in the export card, beside its buttons', async () => {
  const view = new SettingsView(() => Promise.resolve());
  replace(document.body, view.el);
  await view.load(settingsInfo());
  const button = document.querySelector<HTMLButtonElement>('button[data-export="audit"]')!;
  button.click();
  await vi.waitFor(() => expect(document.getElementById('export-msg')?.textContent).toBe('Exported 42 audit entries to /home/ana/gatehouse-audit.json.'));
  expect(document.getElementById('export-msg')?.parentElement).toBe(button.parentElement);
  chosen = null;
  document.querySelector<HTMLButtonElement>('button[data-export="receipts"]')!.click();
  await new Promise((r) => setTimeout(r, 0));
  expect(document.getElementById('export-msg')?.textContent, 'closing the chooser exports nothing and says nothing new').toBe('Exported 42 audit entries to /home/ana/gatehouse-audit.json.');
});
