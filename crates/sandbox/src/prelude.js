// Runs once in a fresh QuickJS context, before the agent's script, in parts. First, as the
// isolate is prepared (before the script or its page's namespaces are known): removes eval and
// every Function constructor, builds console, and queues the intrinsics for freezing (the host
// calls freezeSome while idle). Then `install` defines namespaces: those every run has while
// preparing, and the page's when the run opens, with __interfaces, __getToolInterface and
// console; it freezes whatever is left and, last, the global object itself. Those are the only
// globals the script may use. The host functions come in as arguments and stay in this closure: the script
// never sees them.
(function (hostCall, hostLog, maxCalls) {
  "use strict";
  const g = globalThis;
  const { create, freeze, isFrozen, defineProperty, getOwnPropertyNames, getOwnPropertyDescriptor, getPrototypeOf, keys } = Object;
  const ownKeys = Reflect.ownKeys;
  const apply = Reflect.apply;
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

  // Freezing: objects wait in a queue until `freezeSome` freezes them and queues what each one
  // reaches (its own properties' values and accessors, and its prototype). The global object
  // itself is frozen only at the end of install.
  function reaches(x) {
    return x !== null && x !== undefined && (typeof x === "object" || typeof x === "function");
  }
  function queue(work, x) {
    if (reaches(x)) work[work.length] = x;
  }
  // Freezes up to `budget` objects of the queue `work`; true once it is empty.
  function freezeSome(work, budget) {
    let n = work.length;
    while (n > 0 && budget-- > 0) {
      const v = work[--n];
      if (v === g || isFrozen(v)) continue;
      freeze(v);
      const ks = ownKeys(v);
      for (let i = 0; i < ks.length; i++) {
        const d = getOwnPropertyDescriptor(v, ks[i]);
        if (reaches(d.value)) work[n++] = d.value;
        if (reaches(d.get)) work[n++] = d.get;
        if (reaches(d.set)) work[n++] = d.set;
      }
      const p = getPrototypeOf(v);
      if (reaches(p)) work[n++] = p;
    }
    work.length = n;
    return n === 0;
  }
  // Freezes v and everything reachable from it, at once.
  function deepFreeze(v) {
    const work = [];
    queue(work, v);
    freezeSome(work, Infinity);
    return v;
  }

  // Freezes what JSON.parse made: plain objects and arrays, whose prototypes are frozen already.
  function freezeData(v) {
    if (v === null || typeof v !== "object") return v;
    freeze(v);
    for (const k of keys(v)) freezeData(v[k]);
    return v;
  }

  function define(name, value) {
    defineProperty(g, name, { value: value, enumerable: true, writable: false, configurable: false });
  }

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
    consoleApi[level] = function () {
      const parts = [];
      for (let i = 0; i < arguments.length; i++) parts.push(show(arguments[i]));
      hostLog(level, parts.join(" "));
    };
  }

  // The intrinsics are frozen so the script can't change how this prelude (or a namespace)
  // behaves: queued here, frozen by `freezeSome` in steps while the host is idle, and at the
  // latest when the run opens.
  const intrinsics = [];
  // console is defined last, when the run opens; frozen with the intrinsics.
  queue(intrinsics, consoleApi);
  for (const name of getOwnPropertyNames(g)) queue(intrinsics, g[name]);
  for (const proto of fnProtos) queue(intrinsics, proto);
  queue(intrinsics, getPrototypeOf([][Symbol.iterator]()));
  queue(intrinsics, getPrototypeOf(getPrototypeOf([][Symbol.iterator]())));

  // The namespaces in order, as __interfaces shows them (frozen when the run opens).
  const interfaces = {};
  const hasOwn = Object.prototype.hasOwnProperty;
  let sealed = false;
  // Defines the namespaces of `interfacesJson` (after those of earlier calls); with `last`,
  // then __interfaces and __getToolInterface, and freezes the global object: no later call.
  function install(interfacesJson, last) {
    if (sealed) throw new ErrorCtor("internal: the namespaces are installed already");
    const more = parse(interfacesJson);
    if (more === null || typeof more !== "object" || isArray(more)) {
      throw new TypeErrorCtor("sandbox: the interfaces are not a JSON object");
    }
    for (const ns of keys(more)) {
      const iface = more[ns];
      // One prototype-less object per namespace, frozen with its methods.
      const api = create(null);
      for (const m of iface.methods) {
        const name = m.name;
        const fn = function (args) {
          return invoke(ns, name, args);
        };
        defineProperty(fn, "name", { value: name });
        api[name] = fn;
      }
      define(ns, api);
      // Frozen with the intrinsics, before the run opens.
      queue(intrinsics, api);
      defineProperty(interfaces, ns, { value: freezeData(iface), enumerable: true, writable: false, configurable: false });
    }
    if (!last) return;
    sealed = true;
    freezeSome(intrinsics, Infinity);
    define("__interfaces", freeze(interfaces));
    define(
      "__getToolInterface",
      deepFreeze(function __getToolInterface(ns) {
        if (typeof ns !== "string" || !apply(hasOwn, interfaces, [ns])) {
          throw new ErrorCtor("No tool namespace " + stringify(ns) + ". Namespaces: " + keys(interfaces).join(", ") + ".");
        }
        return interfaces[ns];
      })
    );
    define("console", consoleApi);
    freeze(g);
  }

  return freeze({
    install: install,
    // Freezes up to `budget` more intrinsics; true once all are.
    freezeSome: function (budget) {
      return freezeSome(intrinsics, budget);
    },
    settle: settle,
    encode: function (v) {
      if (v === undefined) return undefined;
      return stringify(v);
    },
  });
})
