// Seeded randomness for the fuzz and chaos tests: a generator for plans, and a hash for choices that
// must not depend on the order in which requests happen to arrive (a message's faults).

/** mulberry32: small, fast, good enough for test plans. */
export function seeded(seed: number) {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    /** In [0, 1). */
    next,
    /** An integer in [min, max]. */
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  }
}

export type Random = ReturnType<typeof seeded>

/** A number in [0, 1) fixed by the seed and the parts (FNV-1a, then one round of the generator). */
export function hashed(seed: number, ...parts: (string | number)[]): number {
  let h = 0x811c9dc5 ^ seed
  for (const c of parts.join('\u0000')) {
    h ^= c.charCodeAt(0)
    h = Math.imul(h, 0x01000193)
  }
  return seeded(h).next()
}
