// The test harness of test mode, shared by the goja runtime
// (runtime/goja.RunTests, host implemented in Go) and the node runtime
// (runtime/node prelude, host implemented in JS): uvu's test registry and
// runner semantics (uvu 0.5.6 dist/index.js) reporting to host instead of
// printing. Evaluated once per run, before the code under test; the value
// is a function of (host, assert, require) that returns
// { test, codeTest, start }.
//
// The program (package testresult's Assemble) is the code under test
// followed by `return [codeModule, testsFunction]`: start waits for it,
// then calls testsFunction(test, assert, require) so that the tests get
// this harness' test and assert as bindings of their own, which the code
// cannot replace or shadow, and a require that answers "uvu", "uvu/assert"
// and any relative path (the code itself, codeModule) before the
// program's require. The code sees codeTest as its global test, which
// refuses to register: the run's tests are those the tests file declares.
//
// Everything the harness calls is captured when it is built, before the
// code runs, and the intrinsics are frozen after (lockdown.js); records
// are objects without a prototype.
(function (host, assert, baseRequire) {
	'use strict';
	const call = Function.prototype.call;
	const uncurry = (f) => call.bind(f);
	const then = uncurry(Promise.prototype.then);
	const resolve = Promise.resolve.bind(Promise);
	const StringCtor = String, ErrorCtor = Error, TypeErrorCtor = TypeError;
	const freeze = Object.freeze;
	const isArray = Array.isArray;
	const startsWith = uncurry(String.prototype.startsWith);
	const entries = []; // { name, handler, only, skip }, in registration order
	const before = [], after = [], beforeEach = [], afterEach = [];
	const defineProperty = Object.defineProperty, PromiseCtor = Promise;
	const append = (list, v) => { defineProperty(list, list.length, { value: v, writable: true, enumerable: true, configurable: true }); };
	const state = { __test__: '', __suite__: '' };
	let started = false;
	// The built-ins as the harness found them (data properties of the
	// global object; accessors such as node's lazy k8s are left out), for
	// unshadowed below.
	const getOwnPropertyNames = Object.getOwnPropertyNames, getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor, sameValue = Object.is;
	const globalObject = globalThis;
	const builtins = { __proto__: null };
	for (const name of getOwnPropertyNames(globalObject)) {
		const d = getOwnPropertyDescriptor(globalObject, name);
		if (d && 'value' in d) builtins[name] = d.value;
	}

	const register = (only, skip) => function (name, handler) {
		if (started) throw new ErrorCtor('test() called after the tests started: register every test at the top level');
		append(entries, { __proto__: null, name: name === undefined ? '' : StringCtor(name), handler, only, skip });
	};
	const hook = (list) => function (fn) {
		if (started) throw new ErrorCtor('hook registered after the tests started: register hooks at the top level');
		append(list, fn);
	};

	const test = register(false, false);
	test.only = register(true, false);
	test.skip = register(false, true);
	test.before = hook(before);
	test.before.each = hook(beforeEach);
	test.after = hook(after);
	test.after.each = hook(afterEach);
	// Tests run once the tests' top level has finished; test.run() of an
	// uvu file is accepted and does nothing.
	test.run = function () {};

	// The code's test: the code under test may not declare tests.
	const refuse = function () {
		throw new ErrorCtor('test() is for the tests: the code under test cannot register tests');
	};
	const codeTest = refuse;
	for (const k of ['only', 'skip', 'before', 'after', 'run']) codeTest[k] = refuse;
	codeTest.before.each = refuse;
	codeTest.after.each = refuse;

	const uvu = freeze({ __proto__: null, test });
	const relative = (s) => startsWith(s, './') || startsWith(s, '../');
	let codeModule;
	const testsRequire = function require(name) {
		const s = StringCtor(name);
		if (s === 'uvu') return uvu;
		if (s === 'uvu/assert') return assert;
		if (relative(s)) return codeModule;
		return baseRequire(name);
	};

	// settle calls ok or fail once v (a value or a promise) settles, through
	// the captured then.
	const settle = (v, ok, fail) => then(resolve(v), ok, fail);
	// step awaits what handler(state) returns; a throw or a rejection is
	// the error.
	const step = (fn) => new PromiseCtor((ok, fail) => {
		let v;
		try {
			v = fn(state);
		} catch (e) {
			fail(e);
			return;
		}
		settle(v, ok, fail);
	});
	const each = async (list) => {
		for (let i = 0; i < list.length; i++) await step(list[i]);
	};

	async function run() {
		started = true;
		const n = entries.length;
		if (n === 0) {
			host.none();
			return;
		}
		let hasOnly = false;
		for (let i = 0; i < n; i++) if (entries[i].only && !entries[i].skip) hasOnly = true;
		host.plan(n);
		for (let i = 0; i < n; i++) host.declare(i, entries[i].name, !entries[i].skip && (!hasOnly || entries[i].only));
		host.phase('before');
		try {
			await each(before);
		} catch (e) {
			host.hookFailed('before', e);
			return;
		}
		for (let i = 0; i < n; i++) {
			const e = entries[i];
			if (e.skip || (hasOnly && !e.only)) {
				host.skip(i);
				continue;
			}
			state.__test__ = e.name;
			host.start(i);
			let failed = false, error;
			try {
				await each(beforeEach);
				await step(e.handler);
			} catch (err) {
				failed = true;
				error = err;
			}
			try {
				await each(afterEach);
			} catch (err) {
				if (!failed) {
					failed = true;
					error = err;
				}
			}
			if (failed) host.fail(i, error);
			else host.pass(i);
		}
		state.__test__ = '';
		host.phase('after');
		try {
			await each(after);
		} catch (e) {
			host.hookFailed('after', e);
			return;
		}
		host.done();
	}

	// unshadowed throws when the code under test declares, at its top
	// level, the name of a built-in that the tests' text names (a const
	// Number or JSON of its own): the tests see the code's declarations,
	// so they would compute with the code's stand-in instead of the
	// built-in. codeModule reads the code's binding of each such name.
	const unshadowed = (mod) => {
		for (const name of getOwnPropertyNames(mod)) {
			if (!(name in builtins) || name === 'test' || name === 'assert' || name === 'require') continue;
			let v, ok = true;
			try {
				v = mod[name];
			} catch (e) {
				ok = false; // a declaration not yet initialised: the code's own
			}
			if (!ok || !sameValue(v, builtins[name])) { // NaN is NaN
				throw new TypeErrorCtor('the code under test declares ' + name + ', the name of a built-in the tests use, so the tests would see the code\'s ' + name + ': rename it');
			}
		}
	};

	// tests runs the tests' top level: completion, the program's promise,
	// fulfils with [codeModule, testsFunction].
	const tests = (v) => {
		if (!isArray(v) || v.length !== 2 || typeof v[1] !== 'function') {
			throw new TypeErrorCtor('the program did not hand over its tests');
		}
		codeModule = v[0];
		unshadowed(codeModule);
		host.phase('tests');
		return v[1](test, assert, testsRequire);
	};
	// start runs the tests once completion, the program's promise, is
	// fulfilled and then the tests' top level has finished.
	const start = (completion) => {
		const crashed = (e) => host.crashed(e);
		then(resolve(completion), (v) => {
			let p;
			try {
				p = tests(v);
			} catch (e) {
				host.topLevelFailed(e);
				return;
			}
			settle(p, () => then(run(), undefined, crashed), (e) => host.topLevelFailed(e));
		}, (e) => host.topLevelFailed(e));
	};
	return { test, codeTest, start };
})
