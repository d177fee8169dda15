// Route groups, one constructor per kind of route (http/routes.ts). A module declares its routes in the
// group of their kind, which says what they are (for the shell, the request log, the OpenAPI documents
// and the server) and brings the credentials that kind needs.

import { Elysia } from 'elysia'
import type { Config } from '../config'
import { apiKeyAuth } from './auth'
import { adminAuth } from './admin-auth'
import { kind } from './routes'

/** The integrator's API, under /api/v1: every request carries an API key (`principal`). */
export const apiRoutes = () => new Elysia({ prefix: '/api/v1', detail: kind('api') }).use(apiKeyAuth())

/** The operator's API, under /admin/v1: every request carries the admin token. */
export const adminRoutes = (config: Config) => new Elysia({ prefix: '/admin/v1', detail: kind('admin') }).use(adminAuth(config))

/** Providers' status callbacks: the provider's own signature authenticates them. */
export const callbackRoutes = (name: string) => new Elysia({ name, detail: kind('callback') })
