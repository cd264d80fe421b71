/* Counts script errors on <body data-errors> (the e2e test reads it). */
window.addEventListener('error', function () {
  var b = document.body;
  if (b) b.setAttribute('data-errors', String(+(b.getAttribute('data-errors') || 0) + 1));
});
