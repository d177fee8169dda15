// The app's route table, read once after the app is composed: which methods a path answers (405 rather
// than 404) and each route's body schema (to name unknown fields).

import type { TSchema } from 'elysia'

export type RouteInfo = { method: string; path: string; hooks?: { body?: unknown } }

type Built = {
  patterns: { method: string; pattern: RegExp }[]
  staticMethods: Map<string, Set<string>>
  bodies: Map<string, TSchema | null>
}

const withoutTrailingSlash = (path: string) => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)

export class RouteTable {
  private built: Built | undefined
  constructor(private readonly source: () => RouteInfo[]) {}

  private table(): Built {
    if (this.built) return this.built
    const routes = this.source()
    const built: Built = { patterns: [], staticMethods: new Map(), bodies: new Map() }
    for (const r of routes) {
      const method = r.method.toUpperCase()
      built.patterns.push({
        method,
        pattern: new RegExp(
          `^${r.path
            .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
            .replace(/:[^/]+/g, '[^/]+')
            .replace(/\*/g, '.*')}/?$`,
        ),
      })
      if (!/[:*]/.test(r.path)) {
        const methods = built.staticMethods.get(r.path) ?? new Set<string>()
        methods.add(method)
        built.staticMethods.set(r.path, methods)
      }
      built.bodies.set(`${method} ${r.path}`, (r.hooks?.body as TSchema | undefined) ?? null)
    }
    // Before the app is composed the table is empty: build again next time.
    if (routes.length > 0) this.built = built
    return built
  }

  /** Methods that some route answers for `path`. */
  methodsFor(path: string): string[] {
    return [
      ...new Set(
        this.table()
          .patterns.filter((r) => r.pattern.test(path))
          .map((r) => r.method),
      ),
    ]
  }

  /**
   * Methods of the route whose path is exactly `path`, if one is. Such a path names that route only:
   * `GET /api/v1/messages/send` is 405, not a lookup of a message whose SID is "send".
   */
  staticMethods(path: string): Set<string> | undefined {
    return this.table().staticMethods.get(withoutTrailingSlash(path))
  }

  /** The body schema of a route (its method and path pattern); null when it takes no body. */
  bodySchema(method: string, route: string): TSchema | null {
    return this.table().bodies.get(`${method.toUpperCase()} ${route}`) ?? null
  }
}
