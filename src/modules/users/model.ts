// Dashboard users in the admin API: the first operator (and more) and member invitations, the list of
// users, and a new single-use link for one who lost theirs.

import { t } from 'elysia'
import { Id, pageFields } from '../../http/models'

const closed = { additionalProperties: false } as const

export const UserBody = t.Object({ email: t.String({ examples: ['ops@example.com'] }) }, closed)

const userFields = {
  id: t.Integer(),
  email: t.String(),
  role: t.String({ description: '`operator` or `member`' }),
  account_id: t.Union([t.Integer(), t.Null()], { description: "A member's account; null for an operator" }),
}
const link = t.String({ description: 'Single-use link to set the password, valid 72 hours; shown only in this answer' })

export const CreatedUser = t.Object({ ...userFields, link })
export type CreatedUser = typeof CreatedUser.static

export const User = t.Object({
  ...userFields,
  active: t.Boolean({ description: 'false: deactivated in the dashboard (cannot sign in, gets no link)' }),
  password_set: t.Boolean({ description: 'The user has set a password; false: invited, the invitation not used yet' }),
  created_at: t.String(),
})
export type User = typeof User.static

export const UserIdParams = t.Object({ id: Id('user', 'User id') })

export const UsersQuery = t.Object({
  ...pageFields,
  email: t.Optional(t.String({ description: 'Only the user with this e-mail (case-insensitive)', examples: ['ops@example.com'] })),
})

export const IssuedLink = t.Object({
  ...userFields,
  kind: t.Union([t.Literal('invite'), t.Literal('reset')], {
    description: '`invite` while the user has never set a password, `reset` once they have',
  }),
  link,
})
export type IssuedLink = typeof IssuedLink.static
