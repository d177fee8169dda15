/**
 * Whether a statement found no connection to its database: none could be opened within the client's
 * wait (postgres.js's CONNECT_TIMEOUT; db/client.ts, CONNECT_WAIT_SECONDS), or one was refused. The
 * statement never reached the server, and it waited already: not worth running again at once.
 */
export function isUnreachable(error: unknown): boolean {
  const code = error instanceof Error ? (error as Error & { code?: string }).code : undefined
  return code === 'CONNECT_TIMEOUT' || code === 'ECONNREFUSED'
}
