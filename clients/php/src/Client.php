<?php
// The PHP client of the prepaid messaging API (the curl extension only). Every call unwraps the
// `{success, data}` envelope and returns `data` as arrays; every error answer throws a MessagingError
// subclass (Errors.php). The operations and fields are those of the OpenAPI document (/docs/json).

namespace PrepaidMessaging;

class Client
{
    private const ERROR_CLASSES = [
        400 => ValidationError::class,
        401 => AuthenticationError::class,
        402 => BalanceError::class,
        404 => NotFoundError::class,
        409 => ConflictError::class,
        422 => ValidationError::class,
        429 => RateLimitError::class,
        502 => ProviderError::class,
    ];

    /** @var string */
    private $baseUrl;
    /** @var string */
    private $apiKey;
    /** @var int */
    private $timeout;

    /** $baseUrl: the service's root, e.g. https://messaging.example.com (the paths carry /api/v1). */
    public function __construct(string $baseUrl, string $apiKey, int $timeout = 30)
    {
        $this->baseUrl = rtrim($baseUrl, '/');
        $this->apiKey = $apiKey;
        $this->timeout = $timeout;
    }

    public function balance(): array
    {
        return $this->request('GET', '/api/v1/balance');
    }

    /**
     * One message (['to' => ..., 'body' => ...], or template_id and variables, ...). Pass an
     * $idempotencyKey to make a retry safe: a repeat within 24 h replays the first answer, charged once.
     */
    public function send(array $message, ?string $idempotencyKey = null): array
    {
        return $this->request('POST', '/api/v1/messages/send', [], [], $message, $idempotencyKey);
    }

    /** Up to 1000 messages; entries fail on their own ($result['results'][$i]['code']). */
    public function bulk(array $messages, ?string $idempotencyKey = null, array $options = []): array
    {
        return $this->request('POST', '/api/v1/messages/bulk', [], [], $options + ['messages' => $messages], $idempotencyKey);
    }

    /** What a send or bulk body would cost now; nothing is charged, sent or reserved. */
    public function quote(array $request): array
    {
        return $this->request('POST', '/api/v1/messages/quote', [], [], $request);
    }

    /**
     * One page ['items', 'total', 'limit', 'offset'], newest first; offset counts records.
     * $query: limit, offset, status, date_from, date_to (YYYY-MM-DD HH:MM:SS), sender_id.
     */
    public function listMessages(array $query = []): array
    {
        return $this->request('GET', '/api/v1/messages', [], $query);
    }

    /** Every message matching $query, page after page ($pageSize a page). */
    public function eachMessage(array $query = [], int $pageSize = 200): \Generator
    {
        $offset = 0;
        while (true) {
            $page = $this->listMessages(['limit' => $pageSize, 'offset' => $offset] + $query);
            foreach ($page['items'] as $item) {
                yield $item;
            }
            $offset += count($page['items']);
            if (count($page['items']) === 0 || $offset >= $page['total']) {
                return;
            }
        }
    }

    public function message(string $messageSid): array
    {
        return $this->request('GET', '/api/v1/messages/{message_sid}', ['message_sid' => $messageSid]);
    }

    /** The WhatsApp templates the account may send; $query: limit, offset, status, name, language. */
    public function listTemplates(array $query = []): array
    {
        return $this->request('GET', '/api/v1/templates', [], $query);
    }

    public function template(int $id): array
    {
        return $this->request('GET', '/api/v1/templates/{id}', ['id' => $id]);
    }

    private function request(string $method, string $template, array $path = [], array $query = [], ?array $body = null, ?string $idempotencyKey = null): array
    {
        $url = $this->baseUrl . preg_replace_callback('/\{(\w+)\}/', function ($m) use ($path) {
            return rawurlencode((string) $path[$m[1]]);
        }, $template);
        $query = array_filter($query, function ($value) {
            return $value !== null;
        });
        if ($query) {
            $url .= '?' . http_build_query($query, '', '&', PHP_QUERY_RFC3986);
        }
        $headers = ['Authorization: Bearer ' . $this->apiKey, 'Accept: application/json'];
        if ($idempotencyKey !== null && $idempotencyKey !== '') {
            $headers[] = 'Idempotency-Key: ' . $idempotencyKey;
        }
        $curl = curl_init($url);
        $answerHeaders = [];
        $options = [
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_RETURNTRANSFER => true,
            CURLOPT_TIMEOUT => $this->timeout,
            CURLOPT_HEADERFUNCTION => function ($curl, $line) use (&$answerHeaders) {
                $parts = explode(':', $line, 2);
                if (count($parts) === 2) {
                    $answerHeaders[strtolower(trim($parts[0]))] = trim($parts[1]);
                }
                return strlen($line);
            },
        ];
        if ($body !== null) {
            $headers[] = 'Content-Type: application/json';
            $options[CURLOPT_POSTFIELDS] = json_encode($body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
        }
        $options[CURLOPT_HTTPHEADER] = $headers;
        curl_setopt_array($curl, $options);
        $raw = curl_exec($curl);
        $status = (int) curl_getinfo($curl, CURLINFO_RESPONSE_CODE);
        $failure = curl_error($curl);
        curl_close($curl);
        if ($raw === false) {
            throw new ServiceError("no answer from $url: $failure", 0, 'NETWORK_ERROR', null);
        }
        $decoded = json_decode($raw, true);
        $envelope = is_array($decoded) ? $decoded : [];
        if ($status >= 200 && $status < 300 && array_key_exists('data', $envelope)) {
            return $envelope['data'];
        }
        $class = self::ERROR_CLASSES[$status] ?? ServiceError::class;
        $retryAfter = $answerHeaders['retry-after'] ?? null;
        throw new $class(
            is_string($envelope['error'] ?? null) ? $envelope['error'] : "HTTP $status",
            $status,
            is_string($envelope['code'] ?? null) ? $envelope['code'] : 'HTTP_ERROR',
            $envelope['request_id'] ?? ($answerHeaders['x-request-id'] ?? null),
            $envelope,
            $retryAfter !== null && ctype_digit($retryAfter) ? (int) $retryAfter : null
        );
    }
}
