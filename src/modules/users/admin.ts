// Admin API for dashboard users: the first operator (and more) from the command line, and member
// invitations for automation. Each answer carries the one-time link that sets the password; the
// link is not stored, only its hash.

import { t } from 'elysia'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { IdParams } from '../../http/models'
import { audit, createUser, type Role } from './service'

const closed = { additionalProperties: false }
const UserBody = t.Object({ email: t.String({ examples: ['ops@example.com'] }) }, closed)
const CreatedUser = t.Object({
  id: t.Integer(),
  email: t.String(),
  role: t.String({ description: '`operator` or `member`' }),
  account_id: t.Union([t.Integer(), t.Null()]),
  link: t.String({ description: 'Single-use link to set the password, valid 72 hours; shown only in this answer' }),
})
const tags = ['Admin']

export const usersAdmin = (deps: Deps) => {
  const { sql, config } = deps
  const make = async (email: string, role: Role, accountId: number | null) => {
    const { user, token } = await createUser(sql, { email, role, accountId, createdBy: null })
    await audit(sql, {
      user: null,
      address: null,
      accountId,
      action: role === 'operator' ? 'operator created' : 'member invited',
      detail: { email: user.email },
    })
    return {
      id: user.id,
      email: user.email,
      role: user.role,
      account_id: user.account_id,
      link: `${config.publicBaseUrl}/dashboard/link/${token}`,
    }
  }
  return adminRoutes(config)
    .post(
      '/operators',
      async ({ body, set }) => {
        set.status = 201
        return ok(await make(body.email, 'operator', null))
      },
      {
        body: UserBody,
        response: { 201: envelopeOf(CreatedUser), ...errorsOf(400, 401, 409, 422) },
        detail: { tags, summary: 'Create a dashboard operator (sees every account); answers the link that sets the password' },
      },
    )
    .post(
      '/accounts/:id/members',
      async ({ params, body, set }) => {
        set.status = 201
        return ok(await make(body.email, 'member', params.id))
      },
      {
        params: IdParams,
        body: UserBody,
        response: { 201: envelopeOf(CreatedUser), ...errorsOf(400, 401, 404, 409, 422) },
        detail: { tags, summary: 'Invite a member of the account to the dashboard; answers the link that sets the password' },
      },
    )
}
