// Starts Swagger UI on /docs (a file of its own: the Content-Security-Policy allows no inline script).
window.ui = window.SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  presets: [window.SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  deepLinking: true,
  validatorUrl: null, // no call to validator.swagger.io
});
