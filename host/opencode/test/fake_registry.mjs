// A minimal npm registry on 127.0.0.1 for the e2e suite: it serves the
// tarballs it is given (npm pack's output) under their package names, as
// registry.npmjs.org would once they are published, and answers 404 for
// everything else (OpenCode then fails fast instead of stalling offline).
// What an npm client reads: GET /<name> (the packument: versions, dist-tags,
// each version's dist.tarball and dist.integrity) and GET the tarball.
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import zlib from "node:zlib";

// package.json of an npm pack tarball (ustar; the first entry npm writes is
// package/package.json, but look at every header to be safe).
export function packageJsonOf(tgz) {
  const tar = zlib.gunzipSync(tgz);
  for (let off = 0; off + 512 <= tar.length;) {
    const name = tar.toString("utf8", off, off + 100).replace(/\0.*$/s, "");
    if (!name) break;
    const size = parseInt(tar.toString("utf8", off + 124, off + 136).replace(/\0.*$/s, "").trim(), 8) || 0;
    if (name === "package/package.json") return JSON.parse(tar.toString("utf8", off + 512, off + 512 + size));
    off += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error("no package/package.json in the tarball");
}

// tarballs: paths of .tgz files. Returns {url, requests, close}.
export async function startFakeRegistry(tarballs) {
  const pkgs = new Map(); // name -> {manifest versions, files: {basename: Buffer}}
  const requests = [];
  let base = "";
  for (const f of tarballs) {
    const tgz = fs.readFileSync(f);
    const pj = packageJsonOf(tgz);
    const file = `${pj.name.replace(/^@[^/]+\//, "")}-${pj.version}.tgz`;
    const p = pkgs.get(pj.name) || { versions: {}, files: {} };
    p.versions[pj.version] = { pj, file,
      integrity: "sha512-" + crypto.createHash("sha512").update(tgz).digest("base64"),
      shasum: crypto.createHash("sha1").update(tgz).digest("hex") };
    p.files[file] = tgz;
    pkgs.set(pj.name, p);
  }
  const packument = (name, p) => {
    const versions = {};
    for (const [v, e] of Object.entries(p.versions))
      versions[v] = { ...e.pj, _id: `${name}@${v}`,
        dist: { tarball: `${base}/${name}/-/${e.file}`, integrity: e.integrity, shasum: e.shasum } };
    const latest = Object.keys(versions).at(-1);
    return { name, "dist-tags": { latest }, versions };
  };
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(req.url.split("?")[0]);
    requests.push({ method: req.method, url, at: Date.now() });
    const m = url.match(/^\/((?:@[^/]+\/)?[^/@]+)(?:\/-\/([^/]+))?$/);
    const p = m && pkgs.get(m[1]);
    if (!p || req.method !== "GET") return res.writeHead(404, { "content-type": "application/json" }).end('{"error":"Not found"}');
    if (m[2]) {
      const body = p.files[m[2]];
      if (!body) return res.writeHead(404).end();
      return res.writeHead(200, { "content-type": "application/octet-stream", "content-length": body.length }).end(body);
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(packument(m[1], p)));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: base + "/",
    requests,
    close: () => new Promise((r) => { server.close(() => r()); server.closeAllConnections?.(); }),
  };
}
