// Runs once in a fresh QuickJS context, before the agent's script. Builds the only globals the
// script may use (the tool namespaces, __interfaces, __getToolInterface, console), removes eval
// and every Function constructor, and freezes the intrinsics. The host functions come in as
// arguments and stay in this closure: the script never sees them.
(function (hostCall, hostLog, interfacesJson, maxCalls) {
  "use strict";
  const g = globalThis;
  const { create, freeze, isFrozen, defineProperty, getOwnPropertyNames, getOwnPropertyDescriptor, getPrototypeOf, keys } = Object;
  const ownKeys = Reflect.ownKeys;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const isArray = Array.isArray;
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;

  // No code from strings: eval goes, and every Function constructor (reachable through any
  // function's `constructor`) is replaced by one that throws.
  delete g.eval;
  // No clock beyond Date, no shared memory (Atomics.wait could block the host).
  delete g.performance;
  delete g.Atomics;
  delete g.SharedArrayBuffer;
  const refuse = function Function() {
    throw new TypeErrorCtor("Creating code from strings is not allowed in the sandbox.");
  };
  const fnProtos = [
    getPrototypeOf(function () {}),
    getPrototypeOf(async function () {}),
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function* () {}),
  ];
  for (const proto of fnProtos) {
    defineProperty(proto, "constructor", { value: refuse, writable: false, configurable: false });
  }
  defineProperty(refuse, "prototype", { value: fnProtos[0] });
  defineProperty(g, "Function", { value: refuse, writable: false, configurable: false, enumerable: false });

  const interfaces = parse(interfacesJson);
  const pending = create(null);

  function invoke(ns, method, args) {
    if (args === undefined) args = {};
    if (args === null || typeof args !== "object" || isArray(args)) {
      throw new TypeErrorCtor(ns + "." + method + " takes one object of arguments, e.g. " + ns + "." + method + "({...})");
    }
    let text;
    try {
      text = stringify(args);
    } catch (e) {
      throw new TypeErrorCtor(ns + "." + method + ": the arguments can't be turned into JSON (" + e.message + ")");
    }
    const id = hostCall(ns, method, text);
    if (id < 0) {
      throw new ErrorCtor("Tool-call limit reached: a script may make at most " + maxCalls + " tool calls.");
    }
    return new PromiseCtor(function (resolve, reject) {
      pending[id] = { resolve: resolve, reject: reject };
    });
  }

  function settle(id, ok, text) {
    const p = pending[id];
    delete pending[id];
    if (!p) return;
    if (ok) p.resolve(text === "" ? undefined : parse(text));
    else p.reject(new ErrorCtor(text));
  }

  // Freezes v and everything reachable from its own properties (values and accessors).
  function deepFreeze(v) {
    if (v === null || (typeof v !== "object" && typeof v !== "function") || isFrozen(v)) return v;
    freeze(v);
    for (const k of ownKeys(v)) {
      const d = getOwnPropertyDescriptor(v, k);
      deepFreeze(d.value);
      deepFreeze(d.get);
      deepFreeze(d.set);
    }
    deepFreeze(getPrototypeOf(v));
    return v;
  }

  function define(name, value) {
    defineProperty(g, name, { value: value, enumerable: true, writable: false, configurable: false });
  }

  // One frozen, prototype-less object per namespace; its methods are frozen too.
  for (const ns of keys(interfaces)) {
    const api = create(null);
    for (const m of interfaces[ns].methods) {
      const name = m.name;
      const fn = function (args) {
        return invoke(ns, name, args);
      };
      defineProperty(fn, "name", { value: name });
      api[name] = freeze(fn);
    }
    define(ns, freeze(api));
  }
  deepFreeze(interfaces);
  define("__interfaces", interfaces);
  define(
    "__getToolInterface",
    freeze(function __getToolInterface(ns) {
      const i = interfaces[ns];
      if (i === undefined) {
        throw new ErrorCtor("No tool namespace " + stringify(ns) + ". Namespaces: " + keys(interfaces).join(", ") + ".");
      }
      return i;
    })
  );

  function show(v) {
    if (typeof v === "string") return v;
    if (v instanceof ErrorCtor) return v.name + ": " + v.message;
    if (v === undefined || typeof v === "function" || typeof v === "symbol" || typeof v === "bigint") {
      return StringCtor(v);
    }
    try {
      const s = stringify(v);
      return s === undefined ? StringCtor(v) : s;
    } catch (e) {
      return StringCtor(v);
    }
  }
  const consoleApi = create(null);
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleApi[level] = freeze(function () {
      const parts = [];
      for (let i = 0; i < arguments.length; i++) parts.push(show(arguments[i]));
      hostLog(level, parts.join(" "));
    });
  }
  define("console", freeze(consoleApi));

  // Freeze the intrinsics so the script can't change how this prelude (or a namespace) behaves.
  for (const name of getOwnPropertyNames(g)) {
    const v = g[name];
    if (v !== null && (typeof v === "object" || typeof v === "function")) {
      deepFreeze(v);
    }
  }
  for (const proto of fnProtos) deepFreeze(proto);
  deepFreeze(getPrototypeOf([][Symbol.iterator]()));
  deepFreeze(getPrototypeOf(getPrototypeOf([][Symbol.iterator]())));

  return freeze({
    settle: settle,
    encode: function (v) {
      if (v === undefined) return undefined;
      return stringify(v);
    },
  });
})
