/**
 * Reads until `done` holds or `ms` pass. On time-out it returns the last value (the assertion after
 * it says what was wrong) or, given `what`, throws naming what was awaited.
 */
export async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, ms = 10_000, what?: string): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > end) {
      if (what) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`)
      return value
    }
    await Bun.sleep(20)
  }
}
