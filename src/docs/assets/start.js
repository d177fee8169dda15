// Starts Swagger UI on the document the page names (an absolute path: /docs and /docs/ both work).
// No request leaves this origin: no validator badge, no ?url= override.
;(function () {
  var root = document.getElementById('swagger-ui')
  window.ui = SwaggerUIBundle({
    url: root.getAttribute('data-document'),
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    queryConfigEnabled: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
  })
})()
