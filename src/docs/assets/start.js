// Starts Swagger UI on the document the page names (an absolute path: /docs and /docs/ both work).
// No request leaves this origin: no validator badge, no ?url= override.
;(function () {
  var root = document.getElementById('swagger-ui')
  window.ui = SwaggerUIBundle({
    url: root.getAttribute('data-document'),
    domNode: root,
    // No deep links: Swagger UI draws each operation's path as a link inside the operation's button
    // (axe: nested-interactive).
    deepLinking: false,
    validatorUrl: null,
    queryConfigEnabled: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
  })
  // The servers' <select> comes without a label (axe: select-name, critical); it is named once drawn.
  new MutationObserver(function () {
    var servers = document.getElementById('servers')
    if (servers && !servers.hasAttribute('aria-label')) servers.setAttribute('aria-label', 'Server')
  }).observe(root, { childList: true, subtree: true })
})()
