<?php
// Webhook signature verification (Standard Webhooks), as the service signs its deliveries.

namespace PrepaidMessaging;

class Webhook
{
    /**
     * Checks a delivery and returns the decoded event. `webhook-signature` holds `v1,` + base64
     * HMAC-SHA256 of `webhook-id.webhook-timestamp.body` keyed with the secret's bytes (`whsec_` +
     * base64, from POST /webhook); the timestamp must be within $toleranceSeconds of now. $headers: name
     * => value, any case (e.g. getallheaders()); $body: the raw body (file_get_contents('php://input')).
     *
     * @throws WebhookVerificationError
     */
    public static function verify(string $secret, array $headers, string $body, int $toleranceSeconds = 300, ?int $now = null): array
    {
        $lower = array_change_key_case($headers, CASE_LOWER);
        $id = $lower['webhook-id'] ?? null;
        $timestamp = $lower['webhook-timestamp'] ?? null;
        $signatures = $lower['webhook-signature'] ?? null;
        if (!$id || !$timestamp || !$signatures) {
            throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
        }
        if (!ctype_digit($timestamp)) {
            throw new WebhookVerificationError('webhook-timestamp is not a number of seconds');
        }
        if (abs(($now ?? time()) - (int) $timestamp) > $toleranceSeconds) {
            throw new WebhookVerificationError('webhook-timestamp too old or too new');
        }
        $key = base64_decode(strpos($secret, 'whsec_') === 0 ? substr($secret, 6) : $secret);
        $expected = base64_encode(hash_hmac('sha256', "$id.$timestamp.$body", $key, true));
        // The header may list several signatures (a secret being rotated), space-separated.
        foreach (explode(' ', $signatures) as $entry) {
            $parts = explode(',', $entry, 2);
            if (count($parts) === 2 && $parts[0] === 'v1' && hash_equals($expected, $parts[1])) {
                return json_decode($body, true);
            }
        }
        throw new WebhookVerificationError('no valid v1 signature');
    }
}
