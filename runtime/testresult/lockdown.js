// Frozen intrinsics for test mode, shared by the goja runtime and the node
// prelude: evaluated once the harness and uvu/assert exist, before the code
// under test runs. The value is a function of the objects to harden too
// (assert, the harness' test). Once it has run, no code can change what the
// harness and assert compute with: every ECMAScript intrinsic reachable from
// the global object (constructors, their prototypes and methods, the hidden
// iterator, generator and typed-array prototypes) is frozen, and the global
// bindings of the intrinsics (Object, Array, Date, Promise, JSON, ...) are
// neither writable nor configurable, as in node's --frozen-intrinsics and
// SES's lockdown.
//
// Assignments that would otherwise hit an inherited frozen property (the
// "override mistake": this.name = 'MyError', Foo.prototype.toString = ...)
// still create an own property, as with SES's moderate override taming: the
// properties most often shadowed that way are accessors whose setter
// defines an own property on the object assigned to.
//
// Error.stackTraceLimit and Error.prepareStackTrace stay writable (node's
// internals and source maps set them); they never decide a result.
(function () {
	'use strict';
	const extra = arguments;
	const { freeze, getOwnPropertyDescriptor, getPrototypeOf, defineProperty, isFrozen, preventExtensions } = Object;
	const ownKeys = Reflect.ownKeys;
	// It runs before the code under test: the built-ins are still the
	// engine's own and are called as they are.
	const g = globalThis;

	const names = [
		'Object', 'Function', 'Array', 'Number', 'Boolean', 'String', 'Symbol', 'BigInt',
		'Date', 'RegExp', 'Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError',
		'TypeError', 'URIError', 'AggregateError', 'Promise', 'Proxy', 'Reflect', 'JSON', 'Math',
		'Map', 'Set', 'WeakMap', 'WeakSet', 'WeakRef', 'FinalizationRegistry', 'ArrayBuffer',
		'SharedArrayBuffer', 'DataView', 'Atomics', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray',
		'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array',
		'BigInt64Array', 'BigUint64Array', 'Intl', 'isNaN', 'isFinite', 'parseInt', 'parseFloat',
		'encodeURI', 'encodeURIComponent', 'decodeURI', 'decodeURIComponent', 'escape', 'unescape',
		'globalThis', 'NaN', 'Infinity', 'undefined',
	];
	const roots = [];
	for (let i = 0; i < names.length; i++) {
		if (names[i] !== 'globalThis' && names[i] in g) roots.push(g[names[i]]);
	}
	// Intrinsics with no global name.
	const hidden = [
		() => getPrototypeOf(function* () {}),
		() => getPrototypeOf(async function () {}),
		() => getPrototypeOf([][Symbol.iterator]()),
		() => getPrototypeOf(getPrototypeOf([][Symbol.iterator]())),
		() => getPrototypeOf(new Map()[Symbol.iterator]()),
		() => getPrototypeOf(new Set()[Symbol.iterator]()),
		() => getPrototypeOf(''[Symbol.iterator]()),
		() => getPrototypeOf(/x/[Symbol.matchAll]('')),
		() => getPrototypeOf(Int8Array),
		() => getOwnPropertyDescriptor(function () { 'use strict'; return arguments; }(), 'callee').get,
	];
	for (let i = 0; i < hidden.length; i++) {
		try {
			const v = hidden[i]();
			if (v) roots.push(v);
		} catch {
			// An engine without it.
		}
	}
	for (let i = 0; i < extra.length; i++) roots.push(extra[i]);

	// Properties made assignable on inheritors (SES's moderate list): '*'
	// every data property of that prototype, else the names listed.
	const errorNames = ['constructor', 'message', 'name', 'toString'];
	const taming = new Map();
	const tame = (obj, keys) => { if (obj) taming.set(obj, keys); };
	tame(Object.prototype, '*');
	tame(Function.prototype, ['constructor', 'bind', 'toString', 'call', 'apply']);
	tame(Array.prototype, ['constructor', 'toString', 'push', 'concat', 'join', Symbol.iterator]);
	tame(Promise.prototype, ['constructor', 'then', 'catch', 'finally']);
	tame(Map.prototype, '*');
	tame(Set.prototype, '*');
	tame(Error.prototype, errorNames);
	for (const n of ['EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError', 'AggregateError']) {
		if (typeof g[n] === 'function') tame(g[n].prototype, errorNames);
	}
	tame(getPrototypeOf(Int8Array).prototype, '*');

	const keep = new Set(['stackTraceLimit', 'prepareStackTrace']);
	const assignable = (obj, key, value, desc) => {
		defineProperty(obj, key, {
			get() { return value; },
			set(v) {
				if (this === obj) throw new TypeError(`Cannot assign to read only property '${String(key)}' of a frozen built-in (test mode)`);
				defineProperty(this, key, { value: v, writable: true, enumerable: true, configurable: true });
			},
			enumerable: desc.enumerable,
			configurable: false,
		});
	};
	const seen = new Set();
	const todo = roots.slice();
	while (todo.length > 0) {
		const obj = todo.pop();
		if ((typeof obj !== 'object' && typeof obj !== 'function') || obj === null || seen.has(obj)) continue;
		seen.add(obj);
		const proto = getPrototypeOf(obj);
		if (proto) todo.push(proto);
		const tamed = taming.get(obj);
		const keys = ownKeys(obj);
		for (let i = 0; i < keys.length; i++) {
			const key = keys[i];
			const desc = getOwnPropertyDescriptor(obj, key);
			if (!desc) continue;
			if ('value' in desc) {
				todo.push(desc.value);
				if (obj === Error && keep.has(key)) continue;
				if (desc.writable && desc.configurable && tamed && (tamed === '*' || tamed.includes(key))) {
					assignable(obj, key, desc.value, desc);
				}
			} else {
				todo.push(desc.get, desc.set);
			}
		}
		if (obj === Error) {
			// Freeze all but the two node sets.
			if (!('prepareStackTrace' in obj)) defineProperty(obj, 'prepareStackTrace', { value: undefined, writable: true, configurable: false });
			for (let i = 0; i < keys.length; i++) {
				const key = keys[i];
				if (keep.has(key)) {
					defineProperty(obj, key, { configurable: false });
					continue;
				}
				const d = getOwnPropertyDescriptor(obj, key);
				defineProperty(obj, key, 'value' in d ? { writable: false, configurable: false } : { configurable: false });
			}
			preventExtensions(obj);
		} else if (!isFrozen(obj)) {
			freeze(obj);
		}
	}
	// The intrinsics' global bindings.
	for (let i = 0; i < names.length; i++) {
		const d = getOwnPropertyDescriptor(g, names[i]);
		if (d && d.configurable) defineProperty(g, names[i], { writable: false, configurable: false });
	}
})
