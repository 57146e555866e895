// The templates hold what their names promise (issue 13): through the API
// (sandbox.create + sandbox.exec, as user 1000 on the isolated network, so
// no registry is reached), every one of the eleven templates runs its
// language's hello world, its package manager on something local, and a
// compile where the language has one; the template env of the seed holds;
// sandbox.templates names the image each template maps to and the version
// that image really has.
//
// The stack maps the templates to the built-in defaults, the sandpit/*
// images of images/build.sh (SANDPIT_LOCAL_IMAGES=0), not to the test
// fixtures the other files use. The images are built once per machine
// (tests/run.sh's "template images" step, or here when one is missing or
// out of date) and reused after.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { sandboxStack } from './lib/suite.mjs';
import { repoRoot, startStack, docker } from './lib/stack.mjs';

const buildSh = path.join(repoRoot, 'images', 'build.sh');
const sh = (args, timeout) => new Promise((resolve) => {
  execFile('bash', [buildSh, ...args], { timeout, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
    resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
});

before(async () => {
  if ((await sh(['--check'], 60000)).code === 0) return;
  const b = await sh([], 40 * 60 * 1000);
  assert.equal(b.code, 0, `images/build.sh failed:\n${b.stderr}`);
}, { timeout: 41 * 60 * 1000 });

let s;
const { create, exec } = sandboxStack((stack) => { s = stack; }, { env: { SANDPIT_LOCAL_IMAGES: '0' } });

const IMAGES = {
  base: 'sandpit/base:latest', alpine: 'sandpit/busybox:latest', python: 'sandpit/python:latest',
  node: 'sandpit/node:latest', bun: 'sandpit/bun:latest', deno: 'sandpit/deno:latest',
  go: 'sandpit/go:latest', rust: 'sandpit/rust:latest', ruby: 'sandpit/ruby:latest',
  java: 'sandpit/java:latest', php: 'sandpit/php:latest',
};

// Per template: a script (POSIX sh, `set -e`) run in /home/user, the lines
// its stdout must hold, and a command whose output the version that
// sandbox.templates reports must contain.
const CASES = {
  base: {
    title: 'hello world, apt and dpkg, git',
    script: String.raw`
      echo "hello from base"
      apt-get --version | head -n 1
      dpkg -s coreutils | grep '^Status:'
      git --version && curl --version | head -n 1
      git init -q repo && cd repo && echo x > f && git add f &&
        git -c user.email=a@b -c user.name=a commit -qm one && git log --format=%s
    `,
    expect: ['hello from base', 'Status: install ok installed', 'one'],
    version: 'cat /etc/debian_version',
  },
  alpine: {
    title: 'hello world and the busybox applets (no package manager)',
    // busybox only: Alpine's apk cannot be fetched here (see the README)
    script: String.raw`
      echo "hello from busybox"
      echo 'int' | sed 's/int/sed ok/'
      printf 'b\na\n' | sort | tr '\n' ' ' | sed 's/ $//'; echo
    `,
    expect: ['hello from busybox', 'sed ok', 'a b'],
    version: 'busybox | head -n 1 | cut -d" " -f2',
  },
  python: {
    title: 'hello world, the standard library, pip wheel, venv and pip --user',
    script: String.raw`
      python3 -c 'print("hello from python")'
      python3 -c 'import json, asyncio, urllib.request, sqlite3, ssl, venv, zlib, ctypes, decimal, http.server, ensurepip; print("stdlib ok", sqlite3.sqlite_version_info >= (3,))'
      pip --version
      mkdir -p pkg/hello_pkg
      printf 'def hi():\n    return "hi from a local package"\n' > pkg/hello_pkg/__init__.py
      printf '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n[project]\nname = "hello-pkg"\nversion = "0.1.0"\n' > pkg/pyproject.toml
      python3 -m pip wheel -q --no-index --no-build-isolation -w dist ./pkg
      python3 -m venv venv
      venv/bin/pip install -q --no-index dist/hello_pkg-0.1.0-py3-none-any.whl
      venv/bin/python -c 'import hello_pkg; print("venv:", hello_pkg.hi())'
      pip install -q --user --no-index dist/hello_pkg-0.1.0-py3-none-any.whl
      python3 -c 'import hello_pkg, sys; print("user:", hello_pkg.hi(), hello_pkg.__file__.startswith("/home/user/.local/"))'
    `,
    expect: ['hello from python', 'stdlib ok True', 'venv: hi from a local package',
      'user: hi from a local package True'],
    version: 'python3 --version',
  },
  node: {
    title: 'hello world, npm init and npm install of a local package',
    script: String.raw`
      node -e 'console.log("hello from node")'
      mkdir -p app/local-pkg && cd app
      printf '{"name":"local-pkg","version":"1.0.0","main":"index.js"}\n' > local-pkg/package.json
      echo 'module.exports = () => "hi from a local package";' > local-pkg/index.js
      npm init -y >/dev/null
      npm install --no-audit ./local-pkg
      node -e 'console.log("npm:", require("local-pkg")())'
      grep -q '"local-pkg": "file:local-pkg"' package.json && echo "saved in package.json"
    `,
    expect: ['hello from node', 'npm: hi from a local package', 'saved in package.json'],
    version: 'node --version | tr -d v',
  },
  bun: {
    title: 'hello world, bun install of a local package, bun build --compile',
    script: String.raw`
      bun -e 'console.log("hello from bun")'
      mkdir -p app/local-pkg && cd app
      printf '{"name":"local-pkg","version":"1.0.0","main":"index.ts"}\n' > local-pkg/package.json
      echo 'export const hi = (): string => "hi from a local package";' > local-pkg/index.ts
      printf '{"name":"app","dependencies":{"local-pkg":"file:./local-pkg"}}\n' > package.json
      echo 'import { hi } from "local-pkg"; console.log("bun:", hi());' > index.ts
      bun install
      bun run index.ts
      bun build --compile index.ts --outfile hello >/dev/null
      ./hello | sed 's/^/compiled /'
    `,
    expect: ['hello from bun', 'bun: hi from a local package', 'compiled bun: hi from a local package'],
    version: 'bun --version',
  },
  deno: {
    title: 'hello world, deno check, run and cache (DENO_DIR)',
    script: String.raw`
      deno eval 'console.log("hello from deno")'
      mkdir -p app/lib && cd app
      echo 'export const hi = (): string => "hi from a local module";' > lib/hi.ts
      printf '{"imports":{"@lib/":"./lib/"}}\n' > deno.json
      echo 'import { hi } from "@lib/hi.ts"; console.log("deno:", hi());' > main.ts
      deno check main.ts
      deno run main.ts
      deno cache main.ts
      [ -d "$DENO_DIR" ] && echo "DENO_DIR is used"
    `,
    expect: ['hello from deno', 'deno: hi from a local module', 'DENO_DIR is used'],
    version: 'deno --version | head -n 1 | cut -d" " -f2',
  },
  go: {
    title: 'hello world with go build, a cgo build',
    script: String.raw`
      mkdir hello && cd hello
      go mod init example.com/hello 2>/dev/null
      printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello from go") }\n' > main.go
      go build -o hello . && ./hello
      mkdir ../cgo && cd ../cgo && go mod init example.com/cgo 2>/dev/null
      printf 'package main\n\n// int twice(int x) { return 2 * x; }\nimport "C"\nimport "fmt"\n\nfunc main() { fmt.Println("cgo:", C.twice(21)) }\n' > main.go
      go build -o cgo . && ./cgo
    `,
    expect: ['hello from go', 'cgo: 42'],
    version: 'go env GOVERSION | sed s/^go//',
  },
  rust: {
    title: 'cargo build and run of a crate without dependencies, rustc (CARGO_HOME)',
    script: String.raw`
      cargo new -q --vcs none hello && cd hello
      sed -i 's/Hello, world!/hello from rust/' src/main.rs
      cargo build -q && ./target/debug/hello
      cargo run -q --release
      [ "$CARGO_HOME" = /home/user/.cargo ] && echo "CARGO_HOME in the home"
      printf 'fn main() { println!("rustc: {}", 6 * 7); }\n' > /tmp/x.rs && rustc -o /tmp/x /tmp/x.rs && /tmp/x
    `,
    expect: ['hello from rust', 'CARGO_HOME in the home', 'rustc: 42'],
    version: 'rustc --version | cut -d" " -f2',
  },
  ruby: {
    title: 'hello world, gem build and install into GEM_HOME, bundler (BUNDLE_APP_CONFIG)',
    script: String.raw`
      ruby -e 'puts "hello from ruby"'
      mkdir -p hello_gem/lib && cd hello_gem
      printf 'module HelloGem\n  def self.hi = "hi from a local gem"\nend\n' > lib/hello_gem.rb
      printf 'Gem::Specification.new do |s|\n  s.name = "hello_gem"\n  s.version = "0.1.0"\n  s.summary = "x"\n  s.authors = ["x"]\n  s.license = "MIT"\n  s.homepage = "https://example.com"\n  s.files = ["lib/hello_gem.rb"]\nend\n' > hello_gem.gemspec
      gem build -q hello_gem.gemspec >/dev/null
      gem install -q --local ./hello_gem-0.1.0.gem >/dev/null
      ruby -e 'require "hello_gem"; puts "gem: #{HelloGem.hi}"'
      [ -f "$GEM_HOME/gems/hello_gem-0.1.0/lib/hello_gem.rb" ] && echo "installed in GEM_HOME"
      cd .. && mkdir app && cd app
      printf 'gem "hello_gem", path: "../hello_gem"\n' > Gemfile
      bundle config set --local without test >/dev/null
      [ -f "$BUNDLE_APP_CONFIG/config" ] && echo "BUNDLE_APP_CONFIG is used"
      bundle install --local >/dev/null 2>&1
      bundle exec ruby -e 'require "hello_gem"; puts "bundler: #{HelloGem.hi}"'
    `,
    expect: ['hello from ruby', 'gem: hi from a local gem', 'installed in GEM_HOME',
      'BUNDLE_APP_CONFIG is used', 'bundler: hi from a local gem'],
    version: 'ruby -e "print RUBY_VERSION"',
  },
  java: {
    title: 'hello world with javac and java, a jar',
    script: String.raw`
      mkdir hello && cd hello
      printf 'public class Hello {\n  public static void main(String[] a) { System.out.println("hello from java"); }\n}\n' > Hello.java
      javac Hello.java && java Hello
      jar cfe hello.jar Hello Hello.class && java -jar hello.jar | sed 's/^/jar: /'
    `,
    expect: ['hello from java', 'jar: hello from java'],
    version: 'javac -version 2>&1 | cut -d" " -f2',
  },
  php: {
    title: 'hello world, php -l, composer dump-autoload of a local class',
    script: String.raw`
      php -r 'echo "hello from php\n";'
      mkdir -p app/src && cd app
      printf '<?php\nnamespace App;\nclass Greeter { public static function hi(): string { return "hi from a local class"; } }\n' > src/Greeter.php
      printf '{"name":"sandpit/app","autoload":{"psr-4":{"App\\\\":"src/"}}}\n' > composer.json
      php -l src/Greeter.php
      composer dump-autoload -q
      php -r 'require "vendor/autoload.php"; echo "composer: ", App\Greeter::hi(), "\n";'
    `,
    expect: ['hello from php', 'No syntax errors detected in src/Greeter.php', 'composer: hi from a local class'],
    version: 'php -r "echo PHP_VERSION;"',
  },
};

const ENV = {
  deno: { DENO_DIR: '/home/user/.deno' },
  rust: { CARGO_HOME: '/home/user/.cargo' },
  ruby: { GEM_HOME: '/home/user/.gem', BUNDLE_APP_CONFIG: '/home/user/.bundle' },
};

let listed;
test('sandbox.templates: the eleven templates, each with its sandpit/* image, present, and its version', async () => {
  const r = await s.api('GET', '/api/sandbox.templates');
  assert.equal(r.status, 200, r.text);
  listed = Object.fromEntries(r.json.map((t) => [t.name, t]));
  assert.deepEqual(Object.keys(listed).sort(), Object.keys(IMAGES).sort());
  for (const [name, image] of Object.entries(IMAGES)) {
    const t = listed[name];
    assert.equal(t.image, image, name);
    assert.equal(t.imagePresent, true, name);
    assert.equal(typeof t.version, 'string', `${name}: version ${t.version}`);
    assert.deepEqual(t.env, ENV[name] || {}, name);
  }
});

for (const [name, c] of Object.entries(CASES)) {
  test(`${name}: ${c.title}, as user 1000, offline`, { timeout: 600000 }, async (t) => {
    const sb = await create({ template: name, memoryMb: 1024, pidsLimit: 512, cpu: 1 });
    t.after(() => s.api('POST', '/api/sandbox.kill', { body: { sandboxId: sb.sandboxId } }).catch(() => {}));
    assert.equal(sb.image, IMAGES[name]);
    const who = await exec(sb.sandboxId, 'echo "$(id -u):$(id -g) $HOME $(pwd)"; env | sort');
    assert.equal(who.json.exitCode, 0, who.text);
    assert.match(who.json.stdout, /^1000:1000 \/home\/user \/home\/user\n/);
    for (const [k, v] of Object.entries(ENV[name] || {}))
      assert.ok(who.json.stdout.includes(`\n${k}=${v}\n`), `${name}: ${k}=${v} in\n${who.json.stdout}`);

    const r = await exec(sb.sandboxId, `set -e\n${c.script}`, { timeoutMs: 540000 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.exitCode, 0, `${name}: exit ${r.json.exitCode}\nstdout:\n${r.json.stdout}\nstderr:\n${r.json.stderr}`);
    const lines = r.json.stdout.split('\n');
    for (const want of c.expect)
      assert.ok(lines.includes(want), `${name}: no line "${want}" in\n${r.json.stdout}\nstderr:\n${r.json.stderr}`);

    // the version sandbox.templates reports is the one the image has
    const v = await exec(sb.sandboxId, c.version);
    assert.equal(v.json.exitCode, 0, v.text);
    const real = v.json.stdout.trim();
    assert.ok(real.length > 0);
    assert.ok(listed?.[name]?.version?.includes(real),
      `${name}: sandbox.templates says "${listed?.[name]?.version}", the image has ${real}`);
  });
}

test('an operator maps a template to another image: its *_VERSION is the version; a missing image says so', async (t) => {
  // an "upstream" image: the busybox fixture (no sandpit.version label) with
  // the variable the python images set
  const tag = `sandpit-test/upstream-python:${process.pid}`;
  const base = await docker('POST', '/containers/create', { Image: 'sandpit-test/busybox:latest', Cmd: ['true'] });
  assert.equal(base.status, 201, base.text);
  const [repo, ver] = tag.split(':');
  const commit = await docker('POST', `/commit?container=${base.json.Id}&repo=${repo}&tag=${ver}` +
    `&changes=${encodeURIComponent('ENV PYTHON_VERSION=3.13.1')}`);
  await docker('DELETE', `/containers/${base.json.Id}`);
  assert.equal(commit.status, 201, commit.text);
  t.after(() => docker('DELETE', `/images/${encodeURIComponent(tag)}?force=true`));
  const st = await startStack({
    env: { SANDPIT_LOCAL_IMAGES: '0' },
    extraConf: [`template.python = ${tag}`, 'template.node = sandpit-test/not-built-anywhere:1',
      'template.php = sandpit/not-built-here:1'],
  });
  t.after(() => st.stop());
  const r = await st.api('GET', '/api/sandbox.templates');
  assert.equal(r.status, 200, r.text);
  const by = Object.fromEntries(r.json.map((x) => [x.name, x]));
  assert.equal(by.python.image, tag);
  assert.equal(by.python.version, 'Python 3.13.1');
  assert.equal(by.python.imagePresent, true);
  assert.equal(by.node.image, 'sandpit-test/not-built-anywhere:1');
  assert.equal(by.node.version, null);
  assert.equal(by.node.imagePresent, false);
  assert.equal(by.go.image, 'sandpit/go:latest', 'the others keep the built-in images');
  // a template image that was not built: the refusal says how to build it
  const c = await st.api('POST', '/api/sandbox.create', { body: { template: 'php' } });
  assert.equal(c.status, 400, c.text);
  assert.match(c.json.message, /^Image sandpit\/not-built-here:1 is not available: .*\(a template image: build it with make images\)$/);
  if (c.json.sandboxId) await st.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
});
