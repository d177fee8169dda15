// Twilio (PROVIDER=twilio): the Messages resource for sending, signed status callbacks at
// /provider/twilio/status, signed incoming messages at /provider/twilio/inbound.

import { defineProvider } from '../provider'
import { twilioStatusCallback } from './callback'
import { twilioInboundCallback } from './inbound'
import { createTwilio } from './send'
import { readTwilioSettings, TWILIO_VARIABLES } from './settings'
import { twilioSenders } from './senders'
import { twilioTemplates } from './templates'

export { TWILIO_STATUS_PATH } from './send'
export { TWILIO_INBOUND_PATH } from './inbound'

export const twilio = defineProvider({
  name: 'twilio',
  variables: TWILIO_VARIABLES,
  readSettings: readTwilioSettings,
  create: createTwilio,
  callbacks: [twilioStatusCallback, twilioInboundCallback],
  senders: twilioSenders,
  waTemplates: twilioTemplates,
  // Twilio's WhatsApp senders take 80 messages/s by default; WhatsApp's pair rate applies behind them.
  pace: {
    perSecond: 80,
    recipientGapMs: 6000,
    source: "Twilio's WhatsApp sender throughput (80 messages/s) and WhatsApp's pair rate",
  },
  // A Content template is named by its SID; its language is part of the template itself.
  templates: {
    ref: 'the Content SID (HX + 32 hex characters)',
    refError: (ref) => (/^HX[0-9a-fA-F]{32}$/.test(ref) ? null : 'must be a Content SID: HX followed by 32 hex characters'),
    language: 'none',
  },
})
