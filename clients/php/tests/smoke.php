<?php
// The client's own check against a running service, run by tests/clients/clients.outer.test.ts.
// Reads MESSAGING_BASE_URL, MESSAGING_API_KEY and a webhook test vector (WEBHOOK_SECRET, WEBHOOK_ID,
// WEBHOOK_TIMESTAMP, WEBHOOK_BODY, WEBHOOK_SIGNATURE) from the environment and prints one JSON
// object of what it saw; the test judges it.

require __DIR__ . '/../src/Errors.php';
require __DIR__ . '/../src/Client.php';
require __DIR__ . '/../src/Webhook.php';

use PrepaidMessaging\Client;
use PrepaidMessaging\MessagingError;
use PrepaidMessaging\ValidationError;
use PrepaidMessaging\Webhook;
use PrepaidMessaging\WebhookVerificationError;

$client = new Client(getenv('MESSAGING_BASE_URL'), getenv('MESSAGING_API_KEY'));
$out = [];

$out['balance_before'] = $client->balance()['wa_balance'];
$sent = $client->send(['to' => '081234567890', 'body' => 'hello from PHP']);
$out['sent'] = ['status' => $sent['status'], 'cost' => $sent['cost']];
$out['quote_total'] = $client->quote(['to' => '081234567891', 'body' => 'what would this cost?'])['total_cost'];

$messages = array_map(function ($to) {
    return ['to' => $to, 'body' => 'bulk from PHP'];
}, ['081234567892', '081234567893', '081234567894']);
$out['bulk_first'] = $client->bulk($messages, 'php-bulk-1');
$out['bulk_repeat'] = $client->bulk($messages, 'php-bulk-1');
$out['balance_after'] = $client->balance()['wa_balance'];

$first = $client->listMessages(['limit' => 2, 'offset' => 0]);
$second = $client->listMessages(['limit' => 2, 'offset' => 2]);
$ids = function ($page) {
    return array_map(function ($m) {
        return $m['id'];
    }, $page['items']);
};
$walked = [];
foreach ($client->eachMessage([], 2) as $message) {
    $walked[] = $message['id'];
}
$out['paging'] = ['total' => $first['total'], 'first' => $ids($first), 'second' => $ids($second), 'walked' => $walked];

try {
    $client->send(['to' => '12345', 'body' => 'not a phone']);
    $out['error'] = null;
} catch (MessagingError $error) {
    $out['error'] = [
        'validation' => $error instanceof ValidationError,
        'status' => $error->status,
        'code' => $error->errorCode,
        'request_id' => $error->requestId,
    ];
}

$out['templates_total'] = $client->listTemplates(['limit' => 10])['total'];

$headers = [
    'Webhook-Id' => getenv('WEBHOOK_ID'),
    'Webhook-Timestamp' => getenv('WEBHOOK_TIMESTAMP'),
    'Webhook-Signature' => getenv('WEBHOOK_SIGNATURE'),
];
$body = getenv('WEBHOOK_BODY');
$refused = function ($secret, $text, $now = null) use ($headers) {
    try {
        Webhook::verify($secret, $headers, $text, 300, $now);
        return false;
    } catch (WebhookVerificationError $e) {
        return true;
    }
};
$out['webhook'] = [
    'event' => Webhook::verify(getenv('WEBHOOK_SECRET'), $headers, $body)['event'],
    'forged_body_refused' => $refused(getenv('WEBHOOK_SECRET'), $body . ' '),
    'other_secret_refused' => $refused('whsec_' . base64_encode('not the secret'), $body),
    'stale_refused' => $refused(getenv('WEBHOOK_SECRET'), $body, (int) getenv('WEBHOOK_TIMESTAMP') + 301),
];

echo json_encode($out, JSON_UNESCAPED_SLASHES), "\n";
