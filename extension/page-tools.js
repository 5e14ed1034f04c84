// Client-defined tools, page side. Runs in the page's main world at document_start, before any
// page script, and gives the page two ways to offer tools to agents:
//   window.btcp.registerProvider({namespace, getInterface(), getAPI()})   (BTCP)
//   document.modelContext.registerTool({name, description, inputSchema, execute})   (WebMCP;
//   navigator.modelContext is the same object; a native implementation is kept and mirrored)
// Interfaces are validated and frozen at registration and the methods captured then, so no
// script can swap a method or another provider afterwards. The extension's worker reads the
// registry and calls methods through the debugger (btcp.__describe / btcp.__invoke).
(() => {
  "use strict";
  if (Object.prototype.hasOwnProperty.call(window, "btcp")) return;

  // Primordials, captured before any page script can replace them.
  const { freeze, defineProperty, create, isFrozen, getOwnPropertyNames, getOwnPropertyDescriptor } = Object;
  const apply = Reflect.apply;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const isArray = Array.isArray;
  const PromiseCtor = Promise;
  const resolved = Promise.resolve.bind(Promise);
  const then = Promise.prototype.then;
  const setTimer = setTimeout.bind(window);
  const clearTimer = clearTimeout.bind(window);
  const test = (re, s) => apply(RegExp.prototype.test, re, [s]);
  const MapCtor = Map;
  const mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapDelete = Map.prototype.delete;
  // Map.prototype.forEach, not for-of: iterators can be patched by page scripts.
  const mapHas = Map.prototype.has, mapForEach = Map.prototype.forEach;
  const mapSize = getOwnPropertyDescriptor(Map.prototype, "size").get;
  const sizeOf = (map) => apply(mapSize, map, []);
  const ErrorCtor = Error, TypeErrorCtor = TypeError, RangeErrorCtor = RangeError;
  const StringCtor = String;
  const isWellFormed = String.prototype.isWellFormed;

  const NAMESPACE = /^[A-Za-z_$][A-Za-z0-9_$]{0,63}$/;
  const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
  // What a page may register: the same numbers as `limits` in crates/protocol/src/btcp.rs (a
  // test there reads this line). A registration past one throws, naming the limit; the worker
  // checks each namespace again and leaves out only one that breaks a rule.
  const LIMITS = freeze({ namespaces: 64, methods: 256, description: 4000, label: 128, schema: 32768, schemaDepth: 24, registry: 524288 });
  // Names the agent's sandbox already uses; a namespace can't shadow them (RESERVED in btcp.rs).
  // Names starting with __ and the members of every object are refused too.
  const RESERVED = new Set(["browser", "webmcp", "console", "globalThis", "Object", "Array", "Function", "JSON",
    "Math", "Promise", "Reflect", "Proxy", "Symbol", "String", "Number", "Boolean", "Date", "RegExp", "Error", "Map",
    "Set", "WeakMap", "WeakSet", "BigInt", "Intl", "undefined", "NaN", "Infinity", "eval", "arguments"]);
  const OBJECT_MEMBERS = new Set(["constructor", "prototype", "hasOwnProperty", "isPrototypeOf",
    "propertyIsEnumerable", "toLocaleString", "toString", "valueOf"]);
  const setHas = Set.prototype.has;
  const startsWith = String.prototype.startsWith;
  function reservedName(name, asNamespace) {
    if (apply(startsWith, name, ["__"])) return "names starting with __ are reserved";
    if (asNamespace && name === "browser") return "it is the extension's built-in tools";
    if (asNamespace && name === "webmcp") return "it holds the page's WebMCP tools (document.modelContext.registerTool)";
    if (asNamespace && apply(setHas, RESERVED, [name])) return "it is a name the code-mode sandbox already uses";
    if (apply(setHas, OBJECT_MEMBERS, [name])) return "it is a property of every JavaScript object";
    return null;
  }
  function limitError(what, limit, got) {
    return new RangeErrorCtor(what + " (limit " + limit + ", got " + got + ")");
  }

  // namespace -> {iface, methods: Map(name -> {fn, self}), owner, source, size}
  const providers = new MapCtor();
  let revision = 0;
  // Characters of every entry's JSON in describe(), and what the wrapper and commas add.
  let registrySize = 0;
  const WRAPPER = 64;

  // Characters the registry would have with `size` in place of `ns`'s entry (if any).
  function sizeWith(ns, size) {
    const old = apply(mapGet, providers, [ns]);
    const count = sizeOf(providers) + (old ? 0 : 1);
    return registrySize - (old ? old.size : 0) + size + count + WRAPPER;
  }

  function entrySize(ns, source, iface) {
    return stringify({ namespace: ns, source: source, interface: iface }).length;
  }

  function deepFreeze(v) {
    if (v !== null && typeof v === "object" && !isFrozen(v)) {
      freeze(v);
      for (const k of getOwnPropertyNames(v)) deepFreeze(v[k]);
    }
    return v;
  }

  // How deeply v nests objects and arrays, counted up to cap + 1; throws on a string that is not
  // well-formed UTF-16 (a lone surrogate), which the worker's JSON reader refuses.
  function depthOf(v, cap, what) {
    if (typeof v === "string") {
      if (!apply(isWellFormed, v, [])) throw new TypeErrorCtor(what + " has a string with a lone surrogate (not valid Unicode)");
      return 0;
    }
    if (v === null || typeof v !== "object") return 0;
    if (cap <= 0) return 1;
    let max = 0;
    const names = getOwnPropertyNames(v);
    for (let i = 0; i < names.length; i++) {
      depthOf(names[i], 0, what);
      const d = depthOf(v[names[i]], cap - 1, what);
      if (d > max) max = d;
    }
    return 1 + max;
  }

  // A JSON copy: no getters, functions or proxies of the page survive into the registry.
  // `size` is its length as JSON text.
  function plainSized(v, what) {
    let text;
    try {
      text = stringify(v);
    } catch (e) {
      throw new TypeErrorCtor(what + " must be JSON data (" + e.message + ")");
    }
    if (text === undefined) throw new TypeErrorCtor(what + " must be JSON data");
    if (text.length > LIMITS.schema) throw limitError(what + " is too large", LIMITS.schema + " characters of JSON", text.length);
    const value = parse(text);
    const depth = depthOf(value, LIMITS.schemaDepth, what);
    if (depth > LIMITS.schemaDepth) throw limitError(what + " nests too deeply", LIMITS.schemaDepth + " levels", "over " + LIMITS.schemaDepth);
    return { value: value, size: text.length };
  }

  function plain(v, what) {
    return plainSized(v, what).value;
  }

  function label(v, what) {
    if (typeof v !== "string") throw new TypeErrorCtor(what + " must be a string");
    if (!apply(isWellFormed, v, [])) throw new TypeErrorCtor(what + " has a lone surrogate (not valid Unicode)");
    if (v.length > LIMITS.label) throw limitError(what + " is too long", LIMITS.label + " characters", v.length);
    return v;
  }

  function describedBy(v, what) {
    if (typeof v !== "string" || v.length === 0) throw new TypeErrorCtor(what + " must be a non-empty string (the agent reads it)");
    if (!apply(isWellFormed, v, [])) throw new TypeErrorCtor(what + " has a lone surrogate (not valid Unicode)");
    if (v.length > LIMITS.description) throw limitError(what + " is too long", LIMITS.description + " characters", v.length);
    return v;
  }

  function checkSchema(schema, what) {
    if (schema === undefined) return { value: { type: "object", properties: {} }, size: 33 };
    const s = plainSized(schema, what);
    const v = s.value;
    if (v === null || typeof v !== "object" || isArray(v) || v.type !== "object") {
      throw new TypeErrorCtor(what + ' must be a JSON Schema with type "object"');
    }
    return s;
  }

  function checkMethod(m, i, ns, nameRule) {
    const where = "btcp: " + ns + ".methods[" + i + "]";
    if (m === null || typeof m !== "object") throw new TypeErrorCtor(where + " must be an object");
    const name = m.name;
    if (typeof name !== "string" || !test(nameRule, name)) {
      throw new TypeErrorCtor(where + ".name must match " + StringCtor(nameRule));
    }
    const why = reservedName(name, false);
    if (why !== null) throw new TypeErrorCtor(where + ".name " + name + " is reserved: " + why);
    const input = checkSchema(m.inputSchema, where + ".inputSchema");
    const out = { name: name, description: describedBy(m.description, where + ".description"), inputSchema: input.value };
    let size = input.size;
    if (m.outputSchema !== undefined) {
      const o = plainSized(m.outputSchema, where + ".outputSchema");
      out.outputSchema = o.value;
      size += o.size;
    }
    if (m.annotations !== undefined) {
      const a = plainSized(m.annotations, where + ".annotations");
      out.annotations = a.value;
      size += a.size;
    }
    if (size > LIMITS.schema) {
      throw limitError(where + " (" + name + "): its schemas and annotations are too large", LIMITS.schema + " characters of JSON", size);
    }
    return out;
  }

  // Adds or replaces ns's entry, unless the registry would grow past its limits.
  function add(ns, entry) {
    entry.size = entrySize(ns, entry.source, entry.iface);
    const old = apply(mapGet, providers, [ns]);
    if (!old && sizeOf(providers) >= LIMITS.namespaces) {
      throw limitError("btcp: this page has too many namespaces to add " + ns, LIMITS.namespaces + " namespaces", sizeOf(providers) + 1);
    }
    const total = sizeWith(ns, entry.size);
    if (total > LIMITS.registry) {
      throw limitError("btcp: the page's tool registry would be too large with " + ns, LIMITS.registry + " characters of JSON", total);
    }
    registrySize += entry.size - (old ? old.size : 0);
    apply(mapSet, providers, [ns, entry]);
    revision++;
  }

  function removeEntry(ns) {
    const entry = apply(mapGet, providers, [ns]);
    if (!entry) return;
    registrySize -= entry.size;
    apply(mapDelete, providers, [ns]);
  }

  function remove(ns, owner) {
    const entry = apply(mapGet, providers, [ns]);
    if (!entry || entry.owner !== owner) return false;
    removeEntry(ns);
    revision++;
    return true;
  }

  function registerProvider(provider) {
    if (provider === null || typeof provider !== "object") throw new TypeErrorCtor("btcp: registerProvider takes a provider object");
    const ns = provider.namespace;
    if (typeof ns !== "string" || !test(NAMESPACE, ns)) {
      throw new TypeErrorCtor("btcp: namespace must be a JavaScript identifier of at most 64 characters, got " + stringify(StringCtor(ns)));
    }
    const why = reservedName(ns, true);
    if (why !== null) throw new TypeErrorCtor("btcp: namespace " + ns + " is reserved: " + why);
    if (apply(mapHas, providers, [ns])) throw new ErrorCtor("btcp: namespace " + ns + " is already registered");
    if (typeof provider.getInterface !== "function" || typeof provider.getAPI !== "function") {
      throw new TypeErrorCtor("btcp: a provider needs getInterface() and getAPI()");
    }
    const raw = apply(provider.getInterface, provider, []);
    const api = apply(provider.getAPI, provider, []);
    if (raw === null || typeof raw !== "object") throw new TypeErrorCtor("btcp: getInterface() must return {name, version, methods}");
    if (api === null || (typeof api !== "object" && typeof api !== "function")) throw new TypeErrorCtor("btcp: getAPI() must return an object of functions");
    if (typeof raw.name !== "string" || typeof raw.version !== "string") {
      throw new TypeErrorCtor("btcp: " + ns + " interface needs a name and a version (strings)");
    }
    const list = raw.methods;
    if (!isArray(list) || list.length === 0) throw new TypeErrorCtor("btcp: " + ns + " interface needs a non-empty methods array");
    const count = list.length;
    if (count > LIMITS.methods) throw limitError("btcp: " + ns + " has too many methods", LIMITS.methods + " methods", count);
    const iface = { name: label(raw.name, "btcp: " + ns + " interface name"), version: label(raw.version, "btcp: " + ns + " interface version"), methods: [] };
    if (typeof raw.description === "string") iface.description = describedBy(raw.description, "btcp: " + ns + " interface description");
    const methods = new MapCtor();
    for (let i = 0; i < count; i++) {
      const m = checkMethod(list[i], i, ns, NAMESPACE);
      if (apply(mapHas, methods, [m.name])) throw new ErrorCtor("btcp: " + ns + "." + m.name + " is declared twice");
      const fn = api[m.name];
      if (typeof fn !== "function") throw new TypeErrorCtor("btcp: getAPI() has no function " + m.name + " for " + ns + "." + m.name);
      apply(mapSet, methods, [m.name, { fn: fn, self: api }]);
      iface.methods[iface.methods.length] = m;
    }
    add(ns, { iface: deepFreeze(iface), methods: methods, owner: provider, source: "btcp" });
    const handle = freeze({ namespace: ns, unregister: () => remove(ns, provider) });
    return handle;
  }

  function unregisterProvider(provider) {
    return provider !== null && typeof provider === "object" && remove(provider.namespace, provider);
  }

  // WebMCP tools live in one namespace, "webmcp", whose interface follows the registrations.
  const webmcpOwner = freeze({});
  const webmcpTools = new MapCtor();
  // Rebuilds the webmcp namespace from webmcpTools; throws (changing nothing) when it would break
  // a limit of the registry.
  function syncWebmcp() {
    const iface = { name: "webmcp", version: "1", description: "Tools this page registered with WebMCP (document.modelContext).", methods: [] };
    const methods = new MapCtor();
    apply(mapForEach, webmcpTools, [(t, name) => {
      iface.methods[iface.methods.length] = t.method;
      apply(mapSet, methods, [name, { fn: t.execute, self: t.tool }]);
    }]);
    if (iface.methods.length > 0) {
      // Map.set keeps the namespace where it was first registered.
      add("webmcp", { iface: deepFreeze(iface), methods: methods, owner: webmcpOwner, source: "webmcp" });
    } else {
      removeEntry("webmcp");
      revision++;
    }
  }

  function registerTool(tool, options) {
    if (tool === null || typeof tool !== "object") throw new TypeErrorCtor("registerTool takes a tool object");
    if (typeof tool.name !== "string" || !test(TOOL_NAME, tool.name)) {
      throw new TypeErrorCtor("registerTool: name must be 1-128 characters of A-Z a-z 0-9 _ . -");
    }
    if (apply(mapHas, webmcpTools, [tool.name])) throw new ErrorCtor("registerTool: a tool named " + tool.name + " is already registered");
    if (typeof tool.execute !== "function") throw new TypeErrorCtor("registerTool: execute must be a function");
    if (sizeOf(webmcpTools) >= LIMITS.methods) throw limitError("registerTool: this page has too many WebMCP tools to add " + tool.name, LIMITS.methods + " tools", sizeOf(webmcpTools) + 1);
    const method = checkMethod(tool, 0, "webmcp", TOOL_NAME);
    if (typeof tool.title === "string") method.title = label(tool.title, "registerTool: title");
    const name = method.name;
    const entry = { method: method, execute: tool.execute, tool: tool };
    const signal = options && options.signal;
    if (signal && signal.aborted) return undefined;
    apply(mapSet, webmcpTools, [name, entry]);
    try {
      syncWebmcp();
    } catch (e) {
      apply(mapDelete, webmcpTools, [name]);
      throw e;
    }
    const unregister = () => {
      if (apply(mapGet, webmcpTools, [name]) === entry) {
        apply(mapDelete, webmcpTools, [name]);
        syncWebmcp();
      }
    };
    if (signal && typeof signal.addEventListener === "function") signal.addEventListener("abort", unregister, { once: true });
    return freeze({ unregister: unregister });
  }

  // For the worker: the registry as JSON text.
  function describe() {
    const namespaces = [];
    apply(mapForEach, providers, [(e, ns) => {
      namespaces[namespaces.length] = { namespace: ns, source: e.source, interface: e.iface };
    }]);
    return stringify({ revision: revision, namespaces: namespaces });
  }

  // For the worker: call a registered method with JSON arguments; answers JSON text
  // {ok, value} or {ok: false, error}: at once when the method answered synchronously, else as
  // a promise that resolves to it within timeoutMs.
  function invoke(ns, method, argsJson, timeoutMs) {
    const fail = (error) => stringify({ ok: false, error: error });
    const entry = apply(mapGet, providers, [ns]);
    const m = entry && apply(mapGet, entry.methods, [method]);
    if (!m) return fail("The page has no tool " + ns + "." + method + " (any more).");
    const answer = (v) => {
      try {
        return v === undefined ? stringify({ ok: true }) : stringify({ ok: true, value: v });
      } catch (e) {
        return fail(ns + "." + method + " returned a value that is not JSON (" + message(e) + ").");
      }
    };
    let value;
    try {
      value = apply(m.fn, m.self, [parse(argsJson)]);
    } catch (e) {
      return fail(message(e));
    }
    // A method that answered at once (no promise, no thenable) is answered as text right away:
    // the worker's Runtime.evaluate then has no promise to await and no timer to set.
    let thenable = false;
    try {
      thenable = value !== null && (typeof value === "object" || typeof value === "function") && typeof value.then === "function";
    } catch (e) {
      return fail(message(e));
    }
    if (!thenable) return answer(value);
    const run = resolved(value);
    // No Promise.race: it iterates its argument, and iterators can be patched by page scripts.
    return new PromiseCtor((res) => {
      let settled = false;
      const finish = (r) => {
        if (settled) return;
        settled = true;
        clearTimer(timer);
        res(r);
      };
      const timer = setTimer(() => finish(fail(ns + "." + method + " did not answer within " + timeoutMs / 1000 + " s.")), timeoutMs);
      apply(then, run, [
        (v) => finish(answer(v)),
        (e) => finish(fail(message(e))),
      ]);
    });
  }

  function message(e) {
    if (e !== null && typeof e === "object" && typeof e.message === "string") return e.message;
    return StringCtor(e);
  }

  const btcp = freeze(create(null, {
    registerProvider: { value: registerProvider, enumerable: true },
    unregisterProvider: { value: unregisterProvider, enumerable: true },
    __describe: { value: describe },
    __invoke: { value: invoke },
  }));
  defineProperty(window, "btcp", { value: btcp, writable: false, configurable: false, enumerable: false });

  // WebMCP: keep a native implementation and mirror its registrations; otherwise provide one.
  const native = document.modelContext || navigator.modelContext;
  let modelContext;
  if (native && typeof native.registerTool === "function") {
    const nativeRegister = native.registerTool.bind(native);
    modelContext = native;
    try {
      defineProperty(native, "registerTool", {
        value: function (tool, options) {
          const result = nativeRegister(tool, options);
          try {
            registerTool(tool, options);
          } catch (e) {
            // The native API accepted it; the mirror is best effort.
          }
          return result;
        },
        writable: false,
        configurable: false,
      });
    } catch (e) {
      // A native object we can't wrap: its tools stay invisible to the extension.
    }
  } else {
    modelContext = freeze(create(null, {
      registerTool: { value: registerTool, enumerable: true },
    }));
    defineProperty(document, "modelContext", { value: modelContext, writable: false, configurable: false });
    try {
      defineProperty(navigator, "modelContext", { value: modelContext, writable: false, configurable: false });
    } catch (e) {
      // navigator.modelContext is a legacy alias; fine to lack it.
    }
  }
})();
