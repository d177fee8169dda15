// The documents' shared error answers (`components.responses`, docs/openapi.ts) put back in place, for
// tests that read an operation's answers: each `$ref` to one becomes a copy of it. Fails on a `$ref`
// that names no shared answer, so a dangling reference cannot pass.

type Json = Record<string, any>

export function answersInline<T extends Json>(document: T): T {
  const shared: Json = document.components?.responses ?? {}
  const copy = structuredClone(document) as Json
  for (const operations of Object.values(copy.paths as Json)) {
    for (const operation of Object.values(operations as Json)) {
      const responses = (operation as Json).responses as Json | undefined
      for (const [status, answer] of Object.entries(responses ?? {})) {
        const ref = (answer as Json).$ref as string | undefined
        if (!ref) continue
        const name = ref.replace('#/components/responses/', '')
        if (!ref.startsWith('#/components/responses/') || !shared[name]) throw new Error(`${status}: ${ref} names no shared answer`)
        responses![status] = structuredClone(shared[name])
      }
    }
  }
  return copy as T
}
