// Admin API for dashboard users: the first operator (and more) from the command line, member
// invitations for automation, the list of users, and a new link for one who lost theirs. Each answer
// that makes a link carries the one-time link that sets the password; the link is not stored, only
// its hash.

import { readSql } from '../../http/reads'
import type { Deps } from '../../deps'
import { adminRoutes } from '../../http/groups'
import type { AdminActor } from '../../http/admin-auth'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { IdParams, listOf } from '../../http/models'
import { page } from '../../http/values'
import { CreatedUser, IssuedLink, User, UserBody, UserIdParams, UsersQuery } from './model'
import { audit, createUser, findUsers, reissueLink, type Role } from './service'
import { formatTimes } from '../../lib/time'

const tags = ['Admin']

export const usersAdmin = (deps: Deps) => {
  const { sql, config } = deps
  const linkOf = (token: string) => `${config.publicBaseUrl}/dashboard/link/${token}`
  const make = async (actor: AdminActor, email: string, role: Role, accountId: number | null) => {
    const { user, token } = await createUser(sql, deps.clock, { email, role, accountId, createdBy: null })
    await audit(sql, {
      ...actor,
      accountId,
      action: role === 'operator' ? 'operator created' : 'member invited',
      detail: { email: user.email },
    })
    return { id: user.id, email: user.email, role: user.role, account_id: user.account_id, link: linkOf(token) }
  }
  return adminRoutes(config)
    .post(
      '/operators',
      async ({ body, set, actor }) => {
        set.status = 201
        return ok(await make(actor, body.email, 'operator', null))
      },
      {
        body: UserBody,
        response: { 201: envelopeOf(CreatedUser), ...errorsOf(400, 401, 409, 422) },
        detail: { tags, summary: 'Create a dashboard operator (sees every account); answers the link that sets the password' },
      },
    )
    .post(
      '/accounts/:id/members',
      async ({ params, body, set, actor }) => {
        set.status = 201
        return ok(await make(actor, body.email, 'member', params.id))
      },
      {
        params: IdParams,
        body: UserBody,
        response: { 201: envelopeOf(CreatedUser), ...errorsOf(400, 401, 404, 409, 422) },
        detail: { tags, summary: 'Invite a member of the account to the dashboard; answers the link that sets the password' },
      },
    )
    .get(
      '/users',
      async ({ query, request }) =>
        ok(formatTimes(await findUsers(await readSql(deps, request), { email: query.email }, page(query)), config.timezone)),
      {
        query: UsersQuery,
        response: { 200: envelopeOf(listOf(User)), ...errorsOf(400, 401, 422) },
        detail: { tags, summary: 'Dashboard users (operators and members), oldest first; `email` finds one' },
      },
    )
    .post(
      '/users/:id/link',
      async ({ params, set, actor }) => {
        const { user, kind, token } = await reissueLink(sql, deps.clock, params.id, null)
        await audit(sql, {
          ...actor,
          accountId: user.account_id,
          action: kind === 'invite' ? 'invitation link made' : 'password reset link made',
          detail: { user_id: user.id, email: user.email },
        })
        set.status = 201
        return ok({ id: user.id, email: user.email, role: user.role, account_id: user.account_id, kind, link: linkOf(token) })
      },
      {
        params: UserIdParams,
        response: { 201: envelopeOf(IssuedLink), ...errorsOf(400, 401, 404, 409) },
        detail: {
          tags,
          summary: 'A new single-use link for a user who lost theirs; earlier unused links of the user stop working',
          description:
            'For a member or operator whose invitation or password-reset link was lost or has expired: a new single-use link ' +
            'that sets the password, valid 72 hours and shown only in this answer (only its hash is stored). `kind` is `invite` ' +
            'while the user has never set a password, `reset` once they have; following a reset link ends all their sessions. ' +
            'Every earlier unused link of the user stops working at once. Recorded in the audit log. 404 `NOT_FOUND` for an ' +
            'unknown user, 409 `CONFLICT` for a deactivated one (reactivate them in the dashboard first). ' +
            '`admin user link EMAIL` on the command line.',
        },
      },
    )
}
