// Opens a dagsgd HTML report in headless Chromium and checks that every plot rendered, with no
// console errors or page errors; saves a full-page screenshot. A report shown one configuration
// at a time (a sweep over more than fabrics and GPU counts) must also redraw its plots when a
// control changes. Usage:
//   node browser_check.mjs REPORT.html OUT_DIR [--max-render-ms N] [--expect-controls]
// (exit 0 = pass; reasons on stderr). The render time (navigation start to every plot drawn) is
// printed, and with --max-render-ms a longer one fails.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [report, outDir, ...options] = process.argv.slice(2);
if (!report || !outDir) {
  console.error('usage: browser_check.mjs REPORT.html OUT_DIR [--max-render-ms N] [--expect-controls]');
  process.exit(2);
}
const maxRenderMs = options.includes('--max-render-ms')
  ? Number(options[options.indexOf('--max-render-ms') + 1]) : Infinity;
const expectControls = options.includes('--expect-controls');
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
  // Polled every animation frame: the time read right after is the render time to a frame.
  await page.waitForFunction(() => document.body.hasAttribute('data-plots-rendered') ||
                                   document.body.hasAttribute('data-plots-error'),
                             null, { timeout: 30000, polling: 'raf' });
  const renderMs = await page.evaluate(() => Math.round(performance.now()));
  if (renderMs > maxRenderMs) problems.push(`rendered in ${renderMs} ms (limit ${maxRenderMs} ms)`);
  const err = await page.evaluate(() => document.body.getAttribute('data-plots-error'));
  if (err) problems.push('plots failed: ' + err);
  const controls = await page.$$('select[data-param]');
  if (expectControls && controls.length === 0) problems.push('no configuration controls');
  const plots = await page.evaluate(() => Array.from(document.querySelectorAll('div[id]'))
    .filter((d) => ['throughput', 'efficiency', 'best', 'breakdown', 'timeline'].includes(d.id))
    .map((d) => {
      const svg = d.querySelector('svg');
      const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      return { id: d.id, marks: svg ? svg.querySelectorAll('path, rect, line').length : 0,
               width: box.width, height: box.height };
    }));
  for (const id of ['throughput', 'efficiency', 'breakdown', ...(controls.length ? ['best'] : [])]) {
    if (!plots.some((p) => p.id === id)) problems.push('plot missing: #' + id);
  }
  for (const p of plots) {
    if (p.marks < 5 || p.width < 100 || p.height < 50) {
      problems.push(`plot #${p.id} is empty (${p.marks} marks, ${p.width}x${p.height})`);
    }
  }
  // Hover values: a point of the throughput plot and a bar of the breakdown show tooltips.
  const throughputTip = await tooltip(page, '#throughput svg path[aria-roledescription="point"], #throughput svg .mark-symbol path');
  if (throughputTip === null) problems.push('no points in the throughput plot');
  else if (!throughputTip.includes('samples/s')) problems.push('no tooltip on hover over a throughput point');
  const barTip = await tooltip(page, '#breakdown svg path[aria-roledescription="bar"]');
  if (barTip === null) problems.push('no bars in the breakdown');
  else if (!barTip.includes('GPU') || !barTip.includes('iteration (ms)')) {
    problems.push('no scenario and iteration in the tooltip of a breakdown bar: ' + barTip);
  }
  let selection = null;
  if (controls.length) selection = await checkSelection(page, problems);
  await page.screenshot({ path: path.join(outDir, 'report.png'), fullPage: true });
  for (const p of plots) {
    const el = await page.$('#' + p.id);
    if (el) await el.screenshot({ path: path.join(outDir, 'plot-' + p.id + '.png') });
  }
  console.log(JSON.stringify({ renderMs, bytes: fs.statSync(report).size, plots, selection,
                                problems }));
} finally {
  await context.close();
  fs.rmSync(userData, { recursive: true, force: true });
}
if (problems.length) {
  for (const p of problems) console.error(p);
  process.exit(1);
}

// The tooltip shown on hovering the first mark `selector` finds ('' if none; null: no mark).
async function tooltip(page, selector) {
  const mark = await page.$(selector);
  if (!mark) return null;
  await mark.hover({ force: true });
  await page.waitForTimeout(300);
  return page.evaluate(() => {
    const t = document.querySelector('#vg-tooltip-element');
    return t && t.classList.contains('visible') ? t.textContent : '';
  });
}

// What a plot draws: its lines' paths and its bars' labels, in document order.
async function drawn(page, id) {
  return page.evaluate((id) => {
    const svg = document.querySelector('#' + id + ' svg');
    if (!svg) return { lines: [], bars: 0, labels: [], faded: 0 };
    const lines = Array.from(svg.querySelectorAll('path[aria-roledescription="line mark"]'))
      .map((p) => p.getAttribute('d'));
    const faded = Array.from(svg.querySelectorAll('path[aria-roledescription="line mark"]'))
      .filter((p) => Number(p.getAttribute('opacity') ?? p.style.opacity ?? 1) < 0.5).length;
    const bars = svg.querySelectorAll('path[aria-roledescription="bar"]').length;
    const labels = Array.from(svg.querySelectorAll('g[aria-label^="Y-axis"] .role-axis-label text'))
      .map((t) => t.textContent);
    return { lines, bars, labels, faded };
  }, id);
}

// Sets a control and waits until every plot that declares its parameter has redrawn.
async function choose(page, param, value) {
  await page.selectOption(`select[data-param="${param}"]`, value);
  await page.waitForFunction((want) => document.body.getAttribute('data-selection-applied') === want,
                             `${param}=${value}`, { timeout: 10000, polling: 'raf' });
}

// Another configuration redraws the scaling lines and the breakdown's bars; highlighting a fabric
// fades the other fabrics' lines and leaves only its bars.
async function checkSelection(page, problems) {
  const params = await page.$$eval('select[data-param]', (ss) => ss.map((s) => ({
    name: s.getAttribute('data-param'), value: s.value,
    options: Array.from(s.options).map((o) => o.value) })));
  const config = params.find((p) => p.name !== 'pick_fabric' && p.options.length > 1);
  const fabric = params.find((p) => p.name === 'pick_fabric');
  const before = { throughput: await drawn(page, 'throughput'), breakdown: await drawn(page, 'breakdown') };
  const other = config.options.find((v) => v !== config.value);
  const t0 = Date.now();
  await choose(page, config.name, other);
  const changeMs = Date.now() - t0;
  const after = { throughput: await drawn(page, 'throughput'), breakdown: await drawn(page, 'breakdown') };
  if (after.throughput.lines.length !== before.throughput.lines.length ||
      after.throughput.lines.length === 0) {
    problems.push(`throughput lines ${before.throughput.lines.length} -> ${after.throughput.lines.length}`);
  }
  if (JSON.stringify(after.throughput.lines) === JSON.stringify(before.throughput.lines)) {
    problems.push(`${config.name}=${other} did not change the throughput lines`);
  }
  if (JSON.stringify(after.breakdown.labels) === JSON.stringify(before.breakdown.labels)) {
    problems.push(`${config.name}=${other} did not change the breakdown's scenarios`);
  }
  await choose(page, 'pick_fabric', fabric.options[1]);
  const one = { throughput: await drawn(page, 'throughput'), breakdown: await drawn(page, 'breakdown') };
  const fabrics = fabric.options.length - 1;
  if (one.throughput.faded !== fabrics - 1) {
    problems.push(`highlighting ${fabric.options[1]} faded ${one.throughput.faded} of ${fabrics} lines`);
  }
  if (!(one.breakdown.bars > 0 && one.breakdown.bars < after.breakdown.bars) ||
      !one.breakdown.labels.every((l) => l.startsWith(fabric.options[1] + ','))) {
    problems.push(`highlighting ${fabric.options[1]} left bars of ${one.breakdown.labels}`);
  }
  await choose(page, 'pick_fabric', 'all');
  return { control: `${config.name}=${other}`, changeMs, lines: after.throughput.lines.length,
           bars: [before.breakdown.bars, after.breakdown.bars, one.breakdown.bars] };
}
