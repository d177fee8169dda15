import type { Deps } from '../../deps'
import { readSql } from '../../http/reads'
import { apiRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { Contact, ContactList, ContactsQuery, CreateContactBody } from './model'
import { createContact, listContacts } from './service'
import { formatTimes } from '../../lib/time'
import { page } from '../../http/values'

const tags = ['Contacts']

export const contactsApi = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  return apiRoutes()
    .get(
      '/contacts',
      async ({ query, principal, request }) =>
        ok(formatTimes(await listContacts(await readSql(deps, request), principal, page(query), query.search), tz)),
      {
        query: ContactsQuery,
        response: { 200: envelopeOf(ContactList), ...errorsOf(400, 401, 422) },
        detail: {
          tags,
          summary: "List the account's contacts, newest first",
          description:
            '`data` is `{items, total, limit, offset, has_more}`: `offset` counts records, `total` counts every match. ' +
            'Items are newest first, ties broken by id (higher first). `search` matches name, phone or e-mail, ' +
            'case-insensitive, anywhere in the value.',
        },
      },
    )
    .post(
      '/contacts',
      async ({ body, principal, set }) => {
        set.status = 201
        return ok(formatTimes(await createContact(sql, principal, body), tz))
      },
      {
        body: CreateContactBody,
        response: { 201: envelopeOf(Contact), ...errorsOf(400, 401, 409, 422) },
        detail: {
          tags,
          summary: 'Add a contact',
          description:
            'The phone is normalised to `+62...`; a second contact with the same normalised phone in the account is ' +
            '409 `CONFLICT`. `tags` is a comma-separated string and comes back as an array.',
        },
      },
    )
}
