"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.scrub = exports.phraseFor = exports.PHRASES = exports.resolveToken = exports.configDir = exports.DEFAULT_URL = exports.TEXT_MAX = exports.BrowserOperatorToolset = void 0;
/**
 * Browser Operator for Claude's browser toolset (`browser_toolset_20260801`): the SDK's abstract
 * browser toolset served by the person's own Chrome, through the Browser Operator extension and
 * `browser-operator serve`.
 */
var toolset_js_1 = require("./toolset.js");
Object.defineProperty(exports, "BrowserOperatorToolset", { enumerable: true, get: function () { return toolset_js_1.BrowserOperatorToolset; } });
Object.defineProperty(exports, "TEXT_MAX", { enumerable: true, get: function () { return toolset_js_1.TEXT_MAX; } });
var client_js_1 = require("./client.js");
Object.defineProperty(exports, "DEFAULT_URL", { enumerable: true, get: function () { return client_js_1.DEFAULT_URL; } });
Object.defineProperty(exports, "configDir", { enumerable: true, get: function () { return client_js_1.configDir; } });
Object.defineProperty(exports, "resolveToken", { enumerable: true, get: function () { return client_js_1.resolveToken; } });
var errors_js_1 = require("./errors.js");
Object.defineProperty(exports, "PHRASES", { enumerable: true, get: function () { return errors_js_1.PHRASES; } });
Object.defineProperty(exports, "phraseFor", { enumerable: true, get: function () { return errors_js_1.phraseFor; } });
Object.defineProperty(exports, "scrub", { enumerable: true, get: function () { return errors_js_1.scrub; } });
