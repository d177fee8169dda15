// The migration texts, imported so `bun build --compile` embeds them in the binary.
import spine from '../../sql/0001_spine.sql' with { type: 'text' }

export type Migration = { version: number; name: string; text: string }

export const MIGRATIONS: Migration[] = [{ version: 1, name: '0001_spine.sql', text: spine }]
