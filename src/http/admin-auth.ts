// The admin API's bearer token, compared in constant time.

import { Elysia } from 'elysia'
import type { Config } from '../config'
import { ApiError } from './errors'
import { bearerToken } from './auth'
import { constantTimeEqual } from '../lib/keys'

export function authenticateAdmin(config: Config, header: string | null | undefined): void {
  const token = bearerToken(header)
  if (!config.adminToken || !constantTimeEqual(token, config.adminToken)) {
    throw new ApiError('AUTH_INVALID_KEY', 'admin token is invalid')
  }
}

export const adminAuth = (config: Config) =>
  new Elysia({ name: 'admin-auth' }).derive({ as: 'scoped' }, ({ request }) => {
    authenticateAdmin(config, request.headers.get('authorization'))
    return { admin: true as const }
  })
