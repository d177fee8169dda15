// Twilio (PROVIDER=twilio): the Messages resource for sending, signed status callbacks at
// /provider/twilio/status.

import { defineProvider } from '../provider'
import { twilioStatusCallback } from './callback'
import { createTwilio } from './send'
import { readTwilioSettings, TWILIO_VARIABLES } from './settings'

export { TWILIO_STATUS_PATH } from './send'

export const twilio = defineProvider({
  name: 'twilio',
  variables: TWILIO_VARIABLES,
  readSettings: readTwilioSettings,
  create: createTwilio,
  callbacks: [twilioStatusCallback],
})
