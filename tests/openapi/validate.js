// Validate an OpenAPI document with @apidevtools/swagger-parser (schema of
// OpenAPI 3.0 plus its semantic checks: $refs resolve, operationIds unique,
// path parameters declared). usage: node validate.js FILE
'use strict';
const SwaggerParser = require('@apidevtools/swagger-parser');
const file = process.argv[2];
if (!file) {
  console.error('usage: node validate.js FILE');
  process.exit(2);
}
SwaggerParser.validate(file)
  .then((api) => {
    console.log(`${file}: valid OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths`);
  })
  .catch((e) => {
    console.error(`${file}: ${e.message}`);
    process.exit(1);
  });
