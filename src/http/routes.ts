// What a route is, declared where the route is: every route group says its kind (`kind('api')` in its
// Elysia instance's `detail`), and a route whose answer may outlast the server's idle timeout says so
// (`UNTIMED`). The app's route table, read once after the app is composed, answers from those
// declarations: which credentials the shell checks and which body rules apply, which methods a path
// answers (405 rather than 404), each route's body schema (to name unknown fields), the request log's
// level, which OpenAPI document a route is in, and whether the server lifts its idle timeout.

import type { TSchema } from 'elysia'

/**
 * - `api`: the integrator's API under /api/v1, an API key, JSON bodies;
 * - `admin`: the operator's API under /admin/v1, the admin token, JSON bodies;
 * - `callback`: a provider's status callback, signed by the provider, its raw body read by the route;
 * - `page`: a dashboard page (a session, forms), answering errors as pages;
 * - `docs`: the API reference pages and documents;
 * - `health`: liveness and readiness, exempt from REQUIRE_HTTPS, logged at debug.
 */
export type RouteKind = 'api' | 'admin' | 'callback' | 'page' | 'docs' | 'health'

// OpenAPI extension names in a route's `detail`: Elysia keeps them with the route, the documents leave
// them out.
const KIND = 'x-route-kind'
const UNTIMED_FLAG = 'x-route-untimed'
const RAW_BODY = 'x-route-raw-body'

/** The `detail` that declares the kind of a group's routes: `new Elysia({ prefix, detail: kind('api') })`. */
export const kind = (value: RouteKind) => ({ [KIND]: value }) as Record<string, unknown>

/**
 * In a route's `detail`: its answer may take longer than the server's idle timeout without a byte on
 * the wire (a send that waits for its hand-offs, an event stream), so the server lifts it for the route.
 */
export const UNTIMED = { [UNTIMED_FLAG]: true } as Record<string, unknown>

/**
 * In an API route's `detail`: it reads its own body, of any Content-Type, up to `limit` bytes (an
 * upload, modules/media): the shell authenticates it and leaves the body to the route's `parse`.
 */
export const rawBody = (limit: number) => ({ [RAW_BODY]: limit }) as Record<string, unknown>

/** A route's own extensions taken out of its `detail`, for the OpenAPI documents. */
export function withoutDeclarations(detail: Record<string, unknown>): Record<string, unknown> {
  const { [KIND]: _kind, [UNTIMED_FLAG]: _untimed, [RAW_BODY]: _raw, ...rest } = detail
  return rest
}

export type RouteInfo = {
  method: string
  path: string
  hooks?: { body?: unknown; detail?: Record<string, unknown>; [hook: string]: unknown }
}

/** What the table knows of one route; `hooks` as Elysia keeps them (its models and `detail`, for the documents). */
export type Route = {
  method: string
  path: string
  kind: RouteKind
  untimed: boolean
  /** The most bytes of body it reads itself (rawBody), or null: the shell's body rules apply. */
  rawBodyLimit: number | null
  body: TSchema | null
  hooks: NonNullable<RouteInfo['hooks']>
}

export const kindOf = (info: RouteInfo): RouteKind => {
  const declared = info.hooks?.detail?.[KIND]
  if (typeof declared !== 'string') throw new Error(`route ${info.method} ${info.path} does not declare its kind`)
  return declared as RouteKind
}

type Built = {
  all: Route[]
  patterns: { route: Route; pattern: RegExp }[]
  staticRoutes: Map<string, Route[]>
  byRoute: Map<string, Route>
}

const withoutTrailingSlash = (path: string) => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)

export class RouteTable {
  private built: Built | undefined
  constructor(private readonly source: () => RouteInfo[]) {}

  private table(): Built {
    if (this.built) return this.built
    const routes = this.source()
    const built: Built = { all: [], patterns: [], staticRoutes: new Map(), byRoute: new Map() }
    for (const info of routes) {
      const method = info.method.toUpperCase()
      const route: Route = {
        method,
        path: info.path,
        kind: kindOf(info),
        untimed: info.hooks?.detail?.[UNTIMED_FLAG] === true,
        rawBodyLimit: typeof info.hooks?.detail?.[RAW_BODY] === 'number' ? (info.hooks.detail[RAW_BODY] as number) : null,
        body: (info.hooks?.body as TSchema | undefined) ?? null,
        hooks: info.hooks ?? {},
      }
      built.all.push(route)
      built.byRoute.set(`${method} ${info.path}`, route)
      if (/[:*]/.test(info.path)) {
        const pattern = new RegExp(
          `^${info.path
            .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
            .replace(/:[^/]+/g, '[^/]+')
            .replace(/\*/g, '.*')}/?$`,
        )
        built.patterns.push({ route, pattern })
      } else {
        const list = built.staticRoutes.get(info.path) ?? []
        list.push(route)
        built.staticRoutes.set(info.path, list)
      }
    }
    // Before the app is composed the table is empty: build again next time.
    if (routes.length > 0) this.built = built
    return built
  }

  /** Every route of the app, in the order they were declared. */
  all(): Route[] {
    return this.table().all
  }

  /** Every route whose path matches `path`, whatever its method; a path that names a route exactly matches only it. */
  private matching(path: string): Route[] {
    const table = this.table()
    const exact = table.staticRoutes.get(withoutTrailingSlash(path))
    if (exact) return exact
    return table.patterns.filter((r) => r.pattern.test(path)).map((r) => r.route)
  }

  /** The route that answers `method` on `path`, if one does. */
  match(method: string, path: string): Route | undefined {
    return this.matching(path).find((r) => r.method === method.toUpperCase())
  }

  /** The route Elysia matched (its method and path pattern, as in a hook's `route`). */
  byRoute(method: string, route: string): Route | undefined {
    return this.table().byRoute.get(`${method.toUpperCase()} ${route}`)
  }

  /** The kind of the routes at `path` (any method), if a route matches it. */
  kindOfPath(path: string): RouteKind | undefined {
    return this.matching(path)[0]?.kind
  }

  /** The body limit of a route that reads its own body (rawBody) at `path`, if one does. */
  rawBodyLimitOfPath(path: string): number | null {
    return this.matching(path).find((r) => r.rawBodyLimit !== null)?.rawBodyLimit ?? null
  }

  /** Methods that some route answers for `path`. */
  methodsFor(path: string): string[] {
    return [...new Set(this.matching(path).map((r) => r.method))]
  }

  /**
   * Methods of the route whose path is exactly `path`, if one is. Such a path names that route only:
   * `GET /api/v1/messages/send` is 405, not a lookup of a message whose SID is "send".
   */
  staticMethods(path: string): Set<string> | undefined {
    const exact = this.table().staticRoutes.get(withoutTrailingSlash(path))
    return exact && new Set(exact.map((r) => r.method))
  }

  /** The body schema of a route (its method and path pattern); null when it takes no body. */
  bodySchema(method: string, route: string): TSchema | null {
    return this.byRoute(method, route)?.body ?? null
  }
}
