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
  const { freeze, defineProperty, create, isFrozen, getOwnPropertyNames } = Object;
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
  const ErrorCtor = Error, TypeErrorCtor = TypeError;
  const StringCtor = String;

  const NAMESPACE = /^[A-Za-z_$][A-Za-z0-9_$]{0,63}$/;
  const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
  // Names the agent's sandbox already uses; a namespace can't shadow them.
  const RESERVED = new Set(["browser", "webmcp", "console", "globalThis", "__interfaces", "__getToolInterface",
    "Object", "Array", "Function", "JSON", "Math", "Promise", "Reflect", "Proxy", "Symbol", "String", "Number",
    "Boolean", "Date", "RegExp", "Error", "Map", "Set", "WeakMap", "WeakSet", "BigInt", "Intl", "undefined",
    "NaN", "Infinity", "eval", "arguments"]);
  const setHas = Set.prototype.has;

  // namespace -> {iface, methods: Map(name -> {fn, self}), owner, source}
  const providers = new MapCtor();
  let revision = 0;

  function deepFreeze(v) {
    if (v !== null && typeof v === "object" && !isFrozen(v)) {
      freeze(v);
      for (const k of getOwnPropertyNames(v)) deepFreeze(v[k]);
    }
    return v;
  }

  // A JSON copy: no getters, functions or proxies of the page survive into the registry.
  function plain(v, what) {
    let text;
    try {
      text = stringify(v);
    } catch (e) {
      throw new TypeErrorCtor(what + " must be JSON data (" + e.message + ")");
    }
    if (text === undefined) throw new TypeErrorCtor(what + " must be JSON data");
    return parse(text);
  }

  function checkSchema(schema, what) {
    if (schema === undefined) return { type: "object", properties: {} };
    const s = plain(schema, what);
    if (s === null || typeof s !== "object" || isArray(s) || s.type !== "object") {
      throw new TypeErrorCtor(what + ' must be a JSON Schema with type "object"');
    }
    return s;
  }

  function checkMethod(m, i, ns, nameRule) {
    const where = "btcp: " + ns + ".methods[" + i + "]";
    if (m === null || typeof m !== "object") throw new TypeErrorCtor(where + " must be an object");
    if (typeof m.name !== "string" || !test(nameRule, m.name)) {
      throw new TypeErrorCtor(where + ".name must match " + StringCtor(nameRule));
    }
    if (typeof m.description !== "string" || m.description.length === 0) {
      throw new TypeErrorCtor(where + ".description must be a non-empty string (the agent reads it)");
    }
    const out = { name: m.name, description: m.description, inputSchema: checkSchema(m.inputSchema, where + ".inputSchema") };
    if (m.outputSchema !== undefined) out.outputSchema = plain(m.outputSchema, where + ".outputSchema");
    if (m.annotations !== undefined) out.annotations = plain(m.annotations, where + ".annotations");
    return out;
  }

  function add(ns, entry) {
    apply(mapSet, providers, [ns, entry]);
    revision++;
  }

  function remove(ns, owner) {
    const entry = apply(mapGet, providers, [ns]);
    if (!entry || entry.owner !== owner) return false;
    apply(mapDelete, providers, [ns]);
    revision++;
    return true;
  }

  function registerProvider(provider) {
    if (provider === null || typeof provider !== "object") throw new TypeErrorCtor("btcp: registerProvider takes a provider object");
    const ns = provider.namespace;
    if (typeof ns !== "string" || !test(NAMESPACE, ns)) {
      throw new TypeErrorCtor("btcp: namespace must be a JavaScript identifier of at most 64 characters, got " + stringify(StringCtor(ns)));
    }
    if (apply(setHas, RESERVED, [ns])) throw new TypeErrorCtor("btcp: namespace " + ns + " is reserved");
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
    if (!isArray(raw.methods) || raw.methods.length === 0) throw new TypeErrorCtor("btcp: " + ns + " interface needs a non-empty methods array");
    const iface = { name: raw.name, version: raw.version, methods: [] };
    if (typeof raw.description === "string") iface.description = raw.description;
    const methods = new MapCtor();
    for (let i = 0; i < raw.methods.length; i++) {
      const m = checkMethod(raw.methods[i], i, ns, NAMESPACE);
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
  function syncWebmcp() {
    const iface = { name: "webmcp", version: "1", description: "Tools this page registered with WebMCP (document.modelContext).", methods: [] };
    const methods = new MapCtor();
    apply(mapForEach, webmcpTools, [(t, name) => {
      iface.methods[iface.methods.length] = t.method;
      apply(mapSet, methods, [name, { fn: t.execute, self: t.tool }]);
    }]);
    if (iface.methods.length > 0) {
      // Map.set keeps the namespace where it was first registered.
      apply(mapSet, providers, ["webmcp", { iface: deepFreeze(iface), methods: methods, owner: webmcpOwner, source: "webmcp" }]);
    } else {
      apply(mapDelete, providers, ["webmcp"]);
    }
    revision++;
  }

  function registerTool(tool, options) {
    if (tool === null || typeof tool !== "object") throw new TypeErrorCtor("registerTool takes a tool object");
    if (typeof tool.name !== "string" || !test(TOOL_NAME, tool.name)) {
      throw new TypeErrorCtor("registerTool: name must be 1-128 characters of A-Z a-z 0-9 _ . -");
    }
    if (apply(mapHas, webmcpTools, [tool.name])) throw new ErrorCtor("registerTool: a tool named " + tool.name + " is already registered");
    if (typeof tool.execute !== "function") throw new TypeErrorCtor("registerTool: execute must be a function");
    const method = checkMethod(tool, 0, "webmcp", TOOL_NAME);
    if (typeof tool.title === "string") method.title = tool.title;
    const name = tool.name;
    const entry = { method: method, execute: tool.execute, tool: tool };
    const signal = options && options.signal;
    if (signal && signal.aborted) return undefined;
    apply(mapSet, webmcpTools, [name, entry]);
    syncWebmcp();
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

  // For the worker: call a registered method with JSON arguments; always resolves to JSON text
  // {ok, value} or {ok: false, error}, within timeoutMs.
  function invoke(ns, method, argsJson, timeoutMs) {
    const fail = (error) => stringify({ ok: false, error: error });
    const entry = apply(mapGet, providers, [ns]);
    const m = entry && apply(mapGet, entry.methods, [method]);
    if (!m) return resolved(fail("The page has no tool " + ns + "." + method + " (any more)."));
    let run;
    try {
      run = resolved(apply(m.fn, m.self, [parse(argsJson)]));
    } catch (e) {
      return resolved(fail(message(e)));
    }
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
        (v) => {
          try {
            finish(v === undefined ? stringify({ ok: true }) : stringify({ ok: true, value: v }));
          } catch (e) {
            finish(fail(ns + "." + method + " returned a value that is not JSON (" + message(e) + ")."));
          }
        },
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
