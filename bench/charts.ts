/**
 * Hand-written SVG bar charts for the benchmark report (no dependency): one row group per figure,
 * one bar per side (svc, baseline, peer). Figures have different units, so each group is scaled to
 * its own largest value and every bar carries its number.
 */

export interface ChartBar {
  name: string;
  value: number;
}

export interface ChartGroup {
  label: string;
  unit: string;
  bars: ChartBar[];
}

const WIDTH = 960;
const LABEL_W = 120;
const BAR_X = LABEL_W + 10;
const BAR_MAX_W = 640;
const BAR_H = 16;
const BAR_GAP = 4;
const GROUP_TITLE_H = 22;
const GROUP_GAP = 14;
const HEADER_H = 64;

export const SERIES_COLORS: Record<string, string> = { svc: '#2f6fdf', baseline: '#98a2ad', peer: '#e0892b' };

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function formatValue(v: number): string {
  if (v >= 100) return Math.round(v).toLocaleString('en-US');
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

/** A horizontal grouped bar chart as a standalone SVG document. */
export function barChart(title: string, subtitle: string, groups: ChartGroup[]): string {
  const heights = groups.map((g) => GROUP_TITLE_H + g.bars.length * (BAR_H + BAR_GAP) + GROUP_GAP);
  const height = HEADER_H + heights.reduce((a, b) => a + b, 0) + 10;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="24" font-size="17" font-weight="bold" fill="#1b1f24">${escapeXml(title)}</text>`,
    `<text x="16" y="44" fill="#57606a">${escapeXml(subtitle)}</text>`,
  ];
  // Legend.
  let lx = WIDTH - 16;
  for (const name of ['peer', 'baseline', 'svc'].filter((n) => groups.some((g) => g.bars.some((b) => b.name === n)))) {
    lx -= 80;
    out.push(`<rect x="${lx}" y="${14}" width="12" height="12" fill="${SERIES_COLORS[name]}"/>`, `<text x="${lx + 16}" y="${24}" fill="#1b1f24">${name}</text>`);
  }
  let y = HEADER_H;
  groups.forEach((g, gi) => {
    out.push(`<text x="16" y="${y + 15}" font-weight="bold" fill="#1b1f24">${escapeXml(`${g.label} (${g.unit})`)}</text>`);
    const max = Math.max(...g.bars.map((b) => b.value), 1e-9);
    let by = y + GROUP_TITLE_H;
    for (const bar of g.bars) {
      const w = Math.max(1, (bar.value / max) * BAR_MAX_W);
      out.push(
        `<text x="${LABEL_W}" y="${by + BAR_H - 4}" text-anchor="end" fill="#57606a">${escapeXml(bar.name)}</text>`,
        `<rect x="${BAR_X}" y="${by}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${SERIES_COLORS[bar.name] ?? '#666'}"/>`,
        `<text x="${(BAR_X + w + 6).toFixed(1)}" y="${by + BAR_H - 4}" fill="#1b1f24">${escapeXml(formatValue(bar.value))}</text>`,
      );
      by += BAR_H + BAR_GAP;
    }
    y += heights[gi];
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
