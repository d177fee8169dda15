// `bun run chaos [--seed N] [--minutes M] [--seconds S]`: the fault scenario (scenario.ts) over
// consecutive seeds from N (default: a random one) until M minutes (default 5) have passed, each
// with an S-second fault phase (default 25). Embedded database by default; with DATABASE_URL, two
// instances on that PostgreSQL server (a fresh database per seed). Stops at the first failing seed
// and prints it, so `bun run chaos --seed <it> --minutes 0` replays that plan.

import { runChaos } from './scenario'

const args = process.argv.slice(2)
if (args.includes('--help') || args.includes('-h')) {
  console.log('usage: bun run chaos [--seed N] [--minutes M] [--seconds S]')
  process.exit(0)
}
const given = new Map<string, number>()
for (let i = 0; i < args.length; i += 2) {
  const name = args[i]!.replace(/^--/, '')
  const value = Number(args[i + 1])
  if (!['seed', 'minutes', 'seconds'].includes(name) || !args[i]!.startsWith('--') || !Number.isInteger(value) || value < 0) {
    console.error(
      `unknown or incomplete option: ${args.slice(i, i + 2).join(' ')}\nusage: bun run chaos [--seed N] [--minutes M] [--seconds S]`,
    )
    process.exit(2)
  }
  given.set(name, value)
}
const option = (name: string, fallback: number) => given.get(name) ?? fallback

const firstSeed = option('seed', Math.floor(Math.random() * 2 ** 31))
const minutes = option('minutes', 5)
const seconds = option('seconds', 25)
const end = Date.now() + minutes * 60_000
let seed = firstSeed
do {
  const report = await runChaos({ seed, seconds, log: (line) => console.log(`  ${line}`) })
  const summary = `seed ${seed} (${report.mode}): ${report.kills} kills, ${report.stats['provider hand-offs'] ?? 0} hand-offs, ${(report.ms / 1000).toFixed(1)} s`
  if (report.violations.length > 0) {
    console.log(`FAIL ${summary}`)
    for (const v of report.violations.slice(0, 50)) console.log(`  - ${v}`)
    if (report.violations.length > 50) console.log(`  … and ${report.violations.length - 50} more`)
    console.log(`replay: bun run chaos --seed ${seed} --minutes 0 --seconds ${seconds}`)
    process.exit(1)
  }
  console.log(`ok   ${summary}`)
  seed++
} while (Date.now() < end)
