// Events can arrive thousands of times a second (a burst of envelopes); the window redraws
// a few times a second at most, and sets no timer at all while nothing arrives.

/** Runs `work` at most once per `every` ms however often the returned function is
 *  called: the first call of a burst runs it `every` ms later, calls while it runs ask
 *  for one more run after it. Nothing is scheduled while nothing calls. */
export function coalesce(work: () => Promise<void>, every: number): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running = false;
  let again = false;
  const schedule = () => {
    if (!timer) timer = setTimeout(() => void fire(), every);
  };
  const fire = async () => {
    timer = null;
    running = true;
    try {
      await work();
    } catch {
      // The work reports its own failures (a view shows its error); the next call retries.
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      schedule();
    }
  };
  return () => {
    if (running) again = true;
    else schedule();
  };
}

/** Runs `work` once, `quiet` ms after the last call: the settled state after a burst. */
export function afterQuiet(work: () => Promise<void>, quiet: number): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  return () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void work().catch(() => {});
    }, quiet);
  };
}
