import { afterEach, beforeEach, vi } from 'vitest';
import { afterQuiet, coalesce } from './coalesce';

describe('redraws while events pour in', () => {
  beforeEach(() => { vi.useFakeTimers(); });
  afterEach(() => { vi.useRealTimers(); });

  it('a burst of 10,000 events in a second redraws at most four times, and the last state is drawn', async () => {
    let redraws = 0;
    const poke = coalesce(async () => { redraws += 1; }, 250);
    for (let i = 0; i < 10_000; i++) {
      poke();
      await vi.advanceTimersByTimeAsync(0.1);
    }
    await vi.advanceTimersByTimeAsync(1_000);
    expect(redraws).toBeGreaterThanOrEqual(1);
    expect(redraws).toBeLessThanOrEqual(5);
    // The last event came after the last redraw began, so one more runs; then nothing.
    const settled = redraws;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(redraws).toBe(settled);
  });

  it('an event during a slow redraw is drawn by one more redraw after it', async () => {
    let redraws = 0;
    let release: () => void = () => {};
    const poke = coalesce(() => { redraws += 1; return new Promise<void>((r) => { release = r; }); }, 100);
    poke();
    await vi.advanceTimersByTimeAsync(100);
    expect(redraws).toBe(1);
    poke(); poke(); poke();
    release();
    await vi.advanceTimersByTimeAsync(100);
    expect(redraws).toBe(2);
    release();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(redraws).toBe(2);
  });

  it('at rest no timer is set', async () => {
    const poke = coalesce(async () => {}, 250);
    const settle = afterQuiet(async () => {}, 2_000);
    expect(vi.getTimerCount()).toBe(0);
    poke(); settle();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the settled state is read once, after the burst', async () => {
    let reads = 0;
    const settle = afterQuiet(async () => { reads += 1; }, 2_000);
    for (let i = 0; i < 50; i++) { settle(); await vi.advanceTimersByTimeAsync(100); }
    expect(reads).toBe(0);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(reads).toBe(1);
  });
});
