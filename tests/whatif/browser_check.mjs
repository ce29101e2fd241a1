// Opens a dagsgd HTML report in headless Chromium and checks that every plot rendered, with no
// console errors or page errors; saves a full-page screenshot. Usage:
//   node browser_check.mjs REPORT.html OUT_DIR   (exit 0 = pass; reasons on stderr)
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [report, outDir] = process.argv.slice(2);
if (!report || !outDir) {
  console.error('usage: browser_check.mjs REPORT.html OUT_DIR');
  process.exit(2);
}
// playwright-core is installed by tools/setup into the source tree's node_modules.
const require = createRequire(process.env.DAGSGD_NODE_MODULES
  ? path.join(process.env.DAGSGD_NODE_MODULES, 'x.js')
  : path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'node_modules', 'x.js'));
const { chromium } = require('playwright-core');

fs.mkdirSync(outDir, { recursive: true });
const userData = fs.mkdtempSync(path.join(outDir, 'chromium-profile-'));
const problems = [];
const context = await chromium.launchPersistentContext(userData, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1200, height: 900 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console error: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  // The report must open offline: any request that leaves file:// is a failure.
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file://')) return route.continue();
    problems.push('network request: ' + url);
    return route.abort();
  });
  await page.goto(pathToFileURL(path.resolve(report)).href);
  await page.waitForFunction(() => document.body.hasAttribute('data-plots-rendered') ||
                                   document.body.hasAttribute('data-plots-error'),
                             null, { timeout: 30000 });
  const err = await page.evaluate(() => document.body.getAttribute('data-plots-error'));
  if (err) problems.push('plots failed: ' + err);
  const plots = await page.evaluate(() => Array.from(document.querySelectorAll('div[id]'))
    .filter((d) => ['throughput', 'efficiency', 'breakdown', 'timeline'].includes(d.id))
    .map((d) => {
      const svg = d.querySelector('svg');
      const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      return { id: d.id, marks: svg ? svg.querySelectorAll('path, rect, line').length : 0,
               width: box.width, height: box.height };
    }));
  for (const id of ['throughput', 'efficiency', 'breakdown']) {
    if (!plots.some((p) => p.id === id)) problems.push('plot missing: #' + id);
  }
  for (const p of plots) {
    if (p.marks < 5 || p.width < 100 || p.height < 50) {
      problems.push(`plot #${p.id} is empty (${p.marks} marks, ${p.width}x${p.height})`);
    }
  }
  // Hover values: a mark of the throughput plot shows a tooltip.
  const point = await page.$('#throughput svg path[aria-roledescription="point"], #throughput svg .mark-symbol path');
  if (point) {
    await point.hover({ force: true });
    await page.waitForTimeout(300);
    const tip = await page.evaluate(() => {
      const t = document.querySelector('#vg-tooltip-element');
      return t && t.classList.contains('visible') ? t.textContent : '';
    });
    if (!tip.includes('samples/s')) problems.push('no tooltip on hover over a throughput point');
  } else {
    problems.push('no points in the throughput plot');
  }
  await page.screenshot({ path: path.join(outDir, 'report.png'), fullPage: true });
  for (const p of plots) {
    const el = await page.$('#' + p.id);
    if (el) await el.screenshot({ path: path.join(outDir, 'plot-' + p.id + '.png') });
  }
  console.log(JSON.stringify({ plots, problems }));
} finally {
  await context.close();
  fs.rmSync(userData, { recursive: true, force: true });
}
if (problems.length) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
