// SPDX-License-Identifier: Apache-2.0
// An independent check of constrained output: ajv (JSON Schema 2020-12, with ajv-formats for
// date, time, date-time and uuid) validates every generated text against the schema it was
// generated under. Usage: node validate_json_outputs.mjs CASES.json, where the file holds
// [{"name", "schema", "outputs": [text, ...]}]. Prints one line per case; exits 1 on any failure.
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const [path] = process.argv.slice(2);
if (!path) {
  console.error('usage: node validate_json_outputs.mjs CASES.json');
  process.exit(2);
}
const cases = JSON.parse(readFileSync(path, 'utf8'));
let failures = 0;
let checked = 0;
for (const { name, schema, outputs } of cases) {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  for (const text of outputs) {
    checked += 1;
    let value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      failures += 1;
      console.log(`FAIL ${name}: not JSON (${error.message}): ${text}`);
      continue;
    }
    if (!validate(value)) {
      failures += 1;
      console.log(`FAIL ${name}: ${ajv.errorsText(validate.errors)}: ${text}`);
    }
  }
  console.log(`${name}: ${outputs.length} outputs checked`);
}
console.log(`${checked - failures} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
