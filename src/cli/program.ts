// How the command line was started, for every text that names a command to type: usage lines, hints,
// examples. From the source tree it is `bun run admin` (and the service `bun run start`); from the
// single binary it is the binary's own name (`messaging-api admin`, and `messaging-api`). The entry
// sets it once, before anything is printed.

export type Program = {
  /** The command line: `bun run admin`, `messaging-api admin`. */
  admin: string
  /** The service: `bun run start`, `messaging-api`. */
  start: string
}

export const SOURCE: Program = { admin: 'bun run admin', start: 'bun run start' }

export const program: Program = { ...SOURCE }

/**
 * A text of the command table (an example, a detail) for the program in use: the table is written
 * for `bun run admin`, as the README's examples are.
 */
export const forProgram = (text: string) => text.replaceAll(SOURCE.admin, program.admin)
