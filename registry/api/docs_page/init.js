// Swagger UI over this deployment's OpenAPI document (its URL, prefix included, is in the
// page). The authorization stays in this page's memory: persistAuthorization is off, so
// nothing goes to localStorage, and nothing is ever put in the URL. No validator badge (it
// would call an outside service) and no configuration from the query string.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    domNode: root,
    url: root.getAttribute("data-openapi-url"),
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null,
    persistAuthorization: false,
    queryConfigEnabled: false,
    displayRequestDuration: true,
    supportedSubmitMethods: ["get", "head"],
  });
})();
