// Which message of a conversation a send names (issue 32): the one it answers (`reply_to`) or reacts to
// (`reaction.message_id`). Only a message of the account's own conversation with that phone through the
// same sender: an inbound message by our id or its provider id, or one of the account's messages by its
// provider id. Anything else (another account's, another phone's, another number's) is not found, so no
// tenant can quote or react to a message it does not hold.

import type { Db } from '../../db/client'

/** The provider's id of the message `ref` names in the conversation, or null when it names none of it. */
export async function quotedMessage(
  sql: Db,
  accountId: number,
  senderId: number | null,
  phone: string,
  ref: string,
): Promise<string | null> {
  const ourId = /^[1-9]\d{0,15}$/.test(ref) && Number.isSafeInteger(Number(ref)) ? Number(ref) : null
  const [found] = await sql<{ pid: string }[]>`
    select provider_message_id as pid from inbound_messages
    where account_id = ${accountId} and phone = ${phone} and sender_id is not distinct from ${senderId}
      and (id = ${ourId} or provider_message_id = ${ref})
    union all
    select message_sid from messages
    where account_id = ${accountId} and phone = ${phone} and sender_id is not distinct from ${senderId}
      and message_sid = ${ref}
    limit 1`
  return found ? found.pid : null
}
