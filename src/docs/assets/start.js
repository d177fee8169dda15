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
    // Plain code for examples: the highlighter's dark theme has tokens below AA contrast (axe: color-contrast).
    syntaxHighlight: { activated: false },
  })
  // Swagger UI's <select>s (the servers, an answer's examples, a media type) come without a label
  // (axe: select-name, critical); each is named once drawn.
  var NAMES = { servers: 'Server', 'examples-select-element': 'Example', 'content-type': 'Media type' }
  new MutationObserver(function () {
    var selects = root.querySelectorAll('select:not([aria-label])')
    for (var i = 0; i < selects.length; i++) {
      var select = selects[i]
      var name = NAMES[select.id] || NAMES[select.className.split(' ')[0]] || 'Choose'
      select.setAttribute('aria-label', name)
    }
  }).observe(root, { childList: true, subtree: true })
})()
