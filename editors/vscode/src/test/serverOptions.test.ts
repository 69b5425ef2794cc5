import { strict as assert } from "node:assert";
import { test } from "node:test";
import { AmplintSettings, DEFAULT_SETTINGS, Environment, clientOptions, normalizeSettings, serverCommand } from "../serverOptions";

function env(overrides: Partial<Environment> = {}): Environment {
  return { platform: "linux", exists: () => true, ...overrides };
}

function settings(overrides: Partial<AmplintSettings> = {}): AmplintSettings {
  return { ...DEFAULT_SETTINGS, ...overrides };
}

test("without settings the Python extension's interpreter runs the module", () => {
  assert.deepEqual(serverCommand(settings(), env({ pythonExtensionInterpreter: ["/proj/.venv/bin/python"] })), {
    command: "/proj/.venv/bin/python",
    args: ["-m", "amplint", "server"],
    source: "python extension",
  });
});

test("without settings or Python extension: python3, and python on Windows", () => {
  assert.deepEqual(serverCommand(settings(), env()), { command: "python3", args: ["-m", "amplint", "server"], source: "default interpreter" });
  assert.equal(serverCommand(settings(), env({ platform: "win32" })).command, "python");
  assert.equal(serverCommand(settings(), env({ pythonExtensionInterpreter: [] })).source, "default interpreter");
});

test("amplint.interpreter wins over the Python extension and keeps its own arguments", () => {
  const chosen = serverCommand(settings({ interpreter: ["/opt/py/bin/python", "-X", "utf8"], args: ["--flag"] }), env({ pythonExtensionInterpreter: ["/other/python"] }));
  assert.deepEqual(chosen, { command: "/opt/py/bin/python", args: ["-X", "utf8", "-m", "amplint", "server", "--flag"], source: "amplint.interpreter" });
});

test("amplint.path wins over every interpreter: the first entry that exists", () => {
  const exists = (path: string) => path === "/usr/local/bin/amplint";
  const chosen = serverCommand(
    settings({ path: ["/missing/amplint", "/usr/local/bin/amplint"], interpreter: ["/opt/py/bin/python"] }),
    env({ exists }),
  );
  assert.deepEqual(chosen, { command: "/usr/local/bin/amplint", args: ["server"], source: "amplint.path" });
});

test("an amplint.path with no existing entry falls through to the interpreters", () => {
  const chosen = serverCommand(settings({ path: ["/missing/amplint"] }), env({ exists: () => false, pythonExtensionInterpreter: ["/venv/python"] }));
  assert.equal(chosen.command, "/venv/python");
  assert.equal(chosen.source, "python extension");
});

test("${workspaceFolder} and ~ are expanded in paths and interpreters", () => {
  const seen: string[] = [];
  const exists = (path: string) => {
    seen.push(path);
    return false;
  };
  const chosen = serverCommand(
    settings({ path: ["~/bin/amplint"], interpreter: ["${workspaceFolder}/.venv/bin/python"] }),
    env({ workspaceFolder: "/work/proj", home: "/home/me", exists }),
  );
  assert.deepEqual(seen, ["/home/me/bin/amplint"]);
  assert.equal(chosen.command, "/work/proj/.venv/bin/python");
});

test("blank entries are ignored rather than started", () => {
  assert.equal(serverCommand(settings({ interpreter: ["", " "] }), env()).source, "default interpreter");
  assert.equal(serverCommand(settings({ path: [""] }), env()).source, "default interpreter");
});

test("client options: python files and unsaved editors, unsafe fixes as the setting says", () => {
  const off = clientOptions(settings());
  assert.deepEqual(off.documentSelector, [
    { scheme: "file", language: "python" },
    { scheme: "untitled", language: "python" },
  ]);
  assert.deepEqual(off.initializationOptions, { unsafeFixes: false });
  assert.deepEqual(clientOptions(settings({ unsafeFixes: true })).initializationOptions, { unsafeFixes: true });
});

test("settings of the wrong type fall back to the defaults; a lone string is one entry", () => {
  assert.deepEqual(normalizeSettings({}), DEFAULT_SETTINGS);
  assert.deepEqual(normalizeSettings({ path: "/bin/amplint", interpreter: [1, "/py"], args: null, unsafeFixes: "yes" }), {
    path: ["/bin/amplint"],
    interpreter: ["/py"],
    args: [],
    unsafeFixes: false,
  });
});
