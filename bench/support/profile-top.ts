// Where a controller's CPU went: self time by function and by module from a `.cpuprofile`
// (bench/fleet-scale.ts with BENCH_PROFILE=<dir>).
//
//   npx tsx bench/support/profile-top.ts <file.cpuprofile> [top]
import { readFileSync } from 'node:fs';
import { isMain, say } from './env.js';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** A module's short name: `node:https`, `@kubernetes/client-node`, `src/kube/apply.ts`, `(gc)`. */
export function moduleOf(url: string, functionName: string): string {
  if (url === '') return `(${functionName || 'native'})`;
  if (url.startsWith('node:')) return url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg?.[1]) return pkg[1];
  const own = /\/((?:src|bench)\/.*)$/.exec(url);
  return own?.[1] ?? url;
}

/** Self time (ms) by function and by module, largest first. */
export function selfTimes(p: Profile): { functions: [string, number][]; modules: [string, number][] } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const fn = new Map<string, number>();
  const mod = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (!node) return;
    const ms = (p.timeDeltas[i] ?? 0) / 1000;
    const { functionName, url, lineNumber } = node.callFrame;
    const m = moduleOf(url, functionName);
    const f = `${functionName || '(anonymous)'} ${m}:${lineNumber + 1}`;
    fn.set(f, (fn.get(f) ?? 0) + ms);
    mod.set(m, (mod.get(m) ?? 0) + ms);
  });
  const sorted = (m: Map<string, number>): [string, number][] => [...m].sort((a, b) => b[1] - a[1]);
  return { functions: sorted(fn), modules: sorted(mod) };
}

if (isMain(import.meta.url)) {
  const file = process.argv[2];
  if (file === undefined) throw new Error('usage: profile-top.ts <file.cpuprofile> [top]');
  const top = Number(process.argv[3] ?? 25);
  const { functions, modules } = selfTimes(JSON.parse(readFileSync(file, 'utf8')) as Profile);
  const total = modules.reduce((a, [, v]) => a + v, 0);
  const line = ([k, v]: [string, number]): string =>
    `${v.toFixed(0).padStart(7)} ms ${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`;
  say(`total ${total.toFixed(0)} ms; by module:`);
  for (const m of modules.slice(0, top)) say(line(m));
  say('by function (self time):');
  for (const f of functions.slice(0, top)) say(line(f));
}
