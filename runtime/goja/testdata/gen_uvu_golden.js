// Generates uvu_assert_golden.json from uvu_assert_cases.js with the real
// uvu (0.5.6) in node: the error text each case yields, by the rule of
// package testresult. Run from this directory:
//
//	npm install uvu@0.5.6   (anywhere; then set NODE_PATH to its node_modules)
//	NODE_PATH=/path/to/node_modules node gen_uvu_golden.js > uvu_assert_golden.json
'use strict';
const fs = require('fs');
const path = require('path');
const util = require('util');
const assert = require('uvu/assert');

const DETAILS_MAX_BYTES = 2048; // testresult.DetailsMaxBytes

function errorText(e) {
  if (typeof e === 'string') return e;
  if (e instanceof Error) {
    if (e.name === 'Assertion') {
      const d = typeof e.details === 'string' ? e.details.replace(/\n+$/, '') : '';
      return d && Buffer.byteLength(d) <= DETAILS_MAX_BYTES ? e.message + '\n' + d : e.message;
    }
    return String(e);
  }
  return util.inspect(e);
}

const src = fs.readFileSync(path.join(__dirname, 'uvu_assert_cases.js'), 'utf8');
const cases = new Function('assert', src + '\nreturn cases;')(assert);
const out = cases.map(([name, fn]) => {
  try {
    fn();
    return { name, passed: true };
  } catch (e) {
    return { name, passed: false, error: errorText(e) };
  }
});
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
