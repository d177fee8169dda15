// The admin API's bearer token, compared in constant time, and who the audit log says made a change
// with it: the command line (which says so in a header) or another client of the token, and from where.

import { Elysia } from 'elysia'
import type { Config } from '../config'
import { ApiError } from './errors'
import { bearerToken } from './auth'
import { clientAddressOf } from './request'
import { constantTimeEqual } from '../lib/keys'
import { ADMIN_CLIENT_HEADER } from '../lib/admin-client'

/** Who made a change through the admin API, for the audit log (the shape of users' `Actor`, without a user). */
export type AdminActor = { user: null; address: string | null; actor: string }

export function authenticateAdmin(config: Config, header: string | null | undefined): void {
  const token = bearerToken(header)
  if (!config.adminToken || !constantTimeEqual(token, config.adminToken)) {
    throw new ApiError('AUTH_INVALID_KEY', 'admin token is invalid')
  }
}

export function adminActorOf(config: Config, request: Request): AdminActor {
  const cli = request.headers.get(ADMIN_CLIENT_HEADER) === 'cli'
  return { user: null, address: clientAddressOf(request, config.trustProxy), actor: cli ? 'CLI (admin token)' : 'admin token' }
}

export const adminAuth = (config: Config) =>
  new Elysia({ name: 'admin-auth' }).derive({ as: 'scoped' }, ({ request }) => {
    authenticateAdmin(config, request.headers.get('authorization'))
    return { admin: true as const, actor: adminActorOf(config, request) }
  })
