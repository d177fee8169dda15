// The migration texts, imported so `bun build --compile` embeds them in the binary.
import spine from '../../sql/0001_spine.sql' with { type: 'text' }
import contactsCampaignsWebhooks from '../../sql/0002_contacts_campaigns_webhooks.sql' with { type: 'text' }
import bulkIdempotency from '../../sql/0003_bulk_idempotency.sql' with { type: 'text' }
import statusPipeline from '../../sql/0004_status_pipeline.sql' with { type: 'text' }
import campaignEngine from '../../sql/0005_campaign_engine.sql' with { type: 'text' }
import listSearch from '../../sql/0006_list_search_indexes.sql' with { type: 'text' }
import moneyOwner from '../../sql/0007_money_owner.sql' with { type: 'text' }
import parkedReportsRetention from '../../sql/0008_parked_reports_retention.sql' with { type: 'text' }
import dashboard from '../../sql/0009_dashboard.sql' with { type: 'text' }
import webhookTestEvents from '../../sql/0010_webhook_test_events.sql' with { type: 'text' }
import webhookListen from '../../sql/0011_webhook_listen.sql' with { type: 'text' }
import approvedTemplates from '../../sql/0012_approved_templates.sql' with { type: 'text' }
import dashboardForms from '../../sql/0013_dashboard_forms.sql' with { type: 'text' }
import lateFailureRefunds from '../../sql/0015_late_failure_refunds.sql' with { type: 'text' }
import keyLimits from '../../sql/0016_key_limits.sql' with { type: 'text' }
import simulatorRules from '../../sql/0017_simulator_rules.sql' with { type: 'text' }
import pace from '../../sql/0018_pace.sql' with { type: 'text' }
import senders from '../../sql/0019_senders.sql' with { type: 'text' }
import inbound from '../../sql/0020_inbound.sql' with { type: 'text' }
import webhookEventsChoice from '../../sql/0021_webhook_events_choice.sql' with { type: 'text' }
import optOuts from '../../sql/0022_opt_outs.sql' with { type: 'text' }
import customerWindow from '../../sql/0023_window.sql' with { type: 'text' }
import messagingLimit from '../../sql/0024_messaging_limit.sql' with { type: 'text' }
import richMessages from '../../sql/0025_rich_messages.sql' with { type: 'text' }
import inboundMedia from '../../sql/0026_inbound_media.sql' with { type: 'text' }
import partitionedHistory from '../../sql/0027_partitioned_history.sql' with { type: 'text' }
import simulatorReportOrder from '../../sql/0028_simulator_report_order.sql' with { type: 'text' }
import statementFunctions from '../../sql/0029_statement_functions.sql' with { type: 'text' }
import listTotalIndex from '../../sql/0030_list_total_index.sql' with { type: 'text' }
import callbackOwners from '../../sql/0031_callback_owners.sql' with { type: 'text' }
import paceClock from '../../sql/0032_pace_clock.sql' with { type: 'text' }
import simulatorClock from '../../sql/0033_simulator_clock.sql' with { type: 'text' }
import eventsNotify from '../../sql/0034_events_notify.sql' with { type: 'text' }
import whatsappTemplates from '../../sql/0035_whatsapp_templates.sql' with { type: 'text' }
import templateChangesEvents from '../../sql/0036_template_changes_events.sql' with { type: 'text' }
import contactAttributes from '../../sql/0037_contact_attributes.sql' with { type: 'text' }
import campaignWaTemplates from '../../sql/0038_campaign_wa_templates.sql' with { type: 'text' }
import verifications from '../../sql/0039_verifications.sql' with { type: 'text' }
import simulatorTemplateReviews from '../../sql/0040_simulator_template_reviews.sql' with { type: 'text' }
import templateRightsAndSyncs from '../../sql/0041_template_rights_and_syncs.sql' with { type: 'text' }
import categoryPrices from '../../sql/0042_category_prices.sql' with { type: 'text' }
import settlements from '../../sql/0043_settlements.sql' with { type: 'text' }
import parkedPricing from '../../sql/0044_parked_pricing.sql' with { type: 'text' }
import campaignMaxPrice from '../../sql/0045_campaign_max_price.sql' with { type: 'text' }
import conversationManners from '../../sql/0046_conversation_manners.sql' with { type: 'text' }
import customerUserIds from '../../sql/0047_customer_user_ids.sql' with { type: 'text' }
import parkedPricedSent from '../../sql/0048_parked_priced_sent.sql' with { type: 'text' }
import mediaUploads from '../../sql/0049_media_uploads.sql' with { type: 'text' }
import senderHealth from '../../sql/0050_sender_health.sql' with { type: 'text' }
import userIdGaps from '../../sql/0051_user_id_gaps.sql' with { type: 'text' }
import messageSettledEvent from '../../sql/0052_message_settled_event.sql' with { type: 'text' }
import templateNamesReused from '../../sql/0053_template_names_reused.sql' with { type: 'text' }
import messagingTake from '../../sql/0054_messaging_take.sql' with { type: 'text' }
import verificationsPerNumber from '../../sql/0055_verifications_per_number.sql' with { type: 'text' }
import messagesSetAside from '../../sql/0056_messages_set_aside.sql' with { type: 'text' }

export type Migration = { version: number; name: string; text: string }

export const MIGRATIONS: Migration[] = [
  { version: 1, name: '0001_spine.sql', text: spine },
  { version: 2, name: '0002_contacts_campaigns_webhooks.sql', text: contactsCampaignsWebhooks },
  { version: 3, name: '0003_bulk_idempotency.sql', text: bulkIdempotency },
  { version: 4, name: '0004_status_pipeline.sql', text: statusPipeline },
  { version: 5, name: '0005_campaign_engine.sql', text: campaignEngine },
  { version: 6, name: '0006_list_search_indexes.sql', text: listSearch },
  { version: 7, name: '0007_money_owner.sql', text: moneyOwner },
  { version: 8, name: '0008_parked_reports_retention.sql', text: parkedReportsRetention },
  { version: 9, name: '0009_dashboard.sql', text: dashboard },
  { version: 10, name: '0010_webhook_test_events.sql', text: webhookTestEvents },
  { version: 11, name: '0011_webhook_listen.sql', text: webhookListen },
  { version: 12, name: '0012_approved_templates.sql', text: approvedTemplates },
  { version: 13, name: '0013_dashboard_forms.sql', text: dashboardForms },
  { version: 15, name: '0015_late_failure_refunds.sql', text: lateFailureRefunds },
  { version: 16, name: '0016_key_limits.sql', text: keyLimits },
  { version: 17, name: '0017_simulator_rules.sql', text: simulatorRules },
  { version: 18, name: '0018_pace.sql', text: pace },
  { version: 19, name: '0019_senders.sql', text: senders },
  { version: 20, name: '0020_inbound.sql', text: inbound },
  { version: 21, name: '0021_webhook_events_choice.sql', text: webhookEventsChoice },
  { version: 22, name: '0022_opt_outs.sql', text: optOuts },
  { version: 23, name: '0023_window.sql', text: customerWindow },
  { version: 24, name: '0024_messaging_limit.sql', text: messagingLimit },
  { version: 25, name: '0025_rich_messages.sql', text: richMessages },
  { version: 26, name: '0026_inbound_media.sql', text: inboundMedia },
  { version: 27, name: '0027_partitioned_history.sql', text: partitionedHistory },
  { version: 28, name: '0028_simulator_report_order.sql', text: simulatorReportOrder },
  { version: 29, name: '0029_statement_functions.sql', text: statementFunctions },
  { version: 30, name: '0030_list_total_index.sql', text: listTotalIndex },
  { version: 31, name: '0031_callback_owners.sql', text: callbackOwners },
  { version: 32, name: '0032_pace_clock.sql', text: paceClock },
  { version: 33, name: '0033_simulator_clock.sql', text: simulatorClock },
  { version: 34, name: '0034_events_notify.sql', text: eventsNotify },
  { version: 35, name: '0035_whatsapp_templates.sql', text: whatsappTemplates },
  { version: 36, name: '0036_template_changes_events.sql', text: templateChangesEvents },
  { version: 37, name: '0037_contact_attributes.sql', text: contactAttributes },
  { version: 38, name: '0038_campaign_wa_templates.sql', text: campaignWaTemplates },
  { version: 39, name: '0039_verifications.sql', text: verifications },
  { version: 40, name: '0040_simulator_template_reviews.sql', text: simulatorTemplateReviews },
  { version: 41, name: '0041_template_rights_and_syncs.sql', text: templateRightsAndSyncs },
  { version: 42, name: '0042_category_prices.sql', text: categoryPrices },
  { version: 43, name: '0043_settlements.sql', text: settlements },
  { version: 44, name: '0044_parked_pricing.sql', text: parkedPricing },
  { version: 45, name: '0045_campaign_max_price.sql', text: campaignMaxPrice },
  { version: 46, name: '0046_conversation_manners.sql', text: conversationManners },
  { version: 47, name: '0047_customer_user_ids.sql', text: customerUserIds },
  { version: 48, name: '0048_parked_priced_sent.sql', text: parkedPricedSent },
  { version: 49, name: '0049_media_uploads.sql', text: mediaUploads },
  { version: 50, name: '0050_sender_health.sql', text: senderHealth },
  { version: 51, name: '0051_user_id_gaps.sql', text: userIdGaps },
  { version: 52, name: '0052_message_settled_event.sql', text: messageSettledEvent },
  { version: 53, name: '0053_template_names_reused.sql', text: templateNamesReused },
  { version: 54, name: '0054_messaging_take.sql', text: messagingTake },
  { version: 55, name: '0055_verifications_per_number.sql', text: verificationsPerNumber },
  { version: 56, name: '0056_messages_set_aside.sql', text: messagesSetAside },
]
