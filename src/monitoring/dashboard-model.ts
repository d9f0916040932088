/**
 * Dashboards in the JSON model of Grafana 7.5, which Plutono (its fork, on Kyma's KCP) reads:
 * `schemaVersion` 27 and only panel types Grafana 7.5 ships (pure).
 */
import type { PromQuery } from './promql-query.js';

/** The schema version Grafana 7.5 writes; Plutono reads nothing newer. */
export const DASHBOARD_SCHEMA_VERSION = 27;

/** Panel types of Grafana 7.5 this project uses. */
export const GRAFANA_75_PANEL_TYPES: ReadonlySet<string> = new Set(['row', 'graph', 'stat', 'table', 'text']);

/** One query of a panel, with the legend of its series. */
export interface PanelQuery {
  readonly query: PromQuery;
  readonly legend: string;
}

/** A panel as the dashboard describes it, before it is laid out. */
export interface PanelSpec {
  readonly type: 'graph' | 'stat';
  readonly title: string;
  readonly description: string;
  readonly queries: readonly PanelQuery[];
  /** Grafana unit id: `short`, `s`, `bytes`, `reqps`, `percentunit`, `dateTimeFromNow`. */
  readonly unit: string;
  /** Columns of Grafana's 24 (default 12). */
  readonly width?: 8 | 12 | 16 | 24;
}

/** A row of panels. */
export interface RowSpec {
  readonly title: string;
  readonly panels: readonly PanelSpec[];
}

/** A whole dashboard. */
export interface DashboardSpec {
  readonly uid: string;
  readonly title: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly rows: readonly RowSpec[];
}

/** A Grafana 7.5 dashboard JSON object. */
export type DashboardJson = Readonly<Record<string, unknown>>;

const DATASOURCE = '$datasource';
const HEIGHT = 8;

function targets(queries: readonly PanelQuery[]): object[] {
  return queries.map((q, i) => ({
    expr: q.query.expr,
    legendFormat: q.legend,
    interval: '',
    refId: String.fromCharCode(65 + i),
  }));
}

function panelJson(p: PanelSpec, id: number, gridPos: object): object {
  const common = {
    id,
    type: p.type,
    title: p.title,
    description: p.description,
    datasource: DATASOURCE,
    gridPos,
    targets: targets(p.queries),
  };
  if (p.type === 'stat') {
    return {
      ...common,
      fieldConfig: {
        defaults: {
          unit: p.unit,
          mappings: [],
          thresholds: { mode: 'absolute', steps: [{ color: 'green', value: null }] },
        },
        overrides: [],
      },
      options: {
        reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
        colorMode: 'value',
        graphMode: 'none',
        justifyMode: 'auto',
        orientation: 'auto',
        textMode: 'auto',
      },
    };
  }
  return {
    ...common,
    fieldConfig: { defaults: {}, overrides: [] },
    options: { alertThreshold: true },
    aliasColors: {},
    bars: false,
    dashLength: 10,
    dashes: false,
    fill: 1,
    fillGradient: 0,
    legend: { show: true, values: false, min: false, max: false, current: false, total: false, avg: false },
    lines: true,
    linewidth: 1,
    nullPointMode: 'null',
    percentage: false,
    pointradius: 2,
    points: false,
    renderer: 'flot',
    seriesOverrides: [],
    spaceLength: 10,
    stack: false,
    steppedLine: false,
    thresholds: [],
    timeRegions: [],
    tooltip: { shared: true, sort: 0, value_type: 'individual' },
    xaxis: { mode: 'time', show: true, values: [], buckets: null, name: null },
    yaxes: [
      { format: p.unit, logBase: 1, show: true, min: null, max: null, label: null },
      { format: 'short', logBase: 1, show: false, min: null, max: null, label: null },
    ],
    yaxis: { align: false, alignLevel: null },
  };
}

/** Lays the rows out on Grafana's 24-column grid and renders the dashboard's JSON (pure). */
export function renderDashboard(d: DashboardSpec): DashboardJson {
  const panels: object[] = [];
  let id = 1;
  let y = 0;
  for (const row of d.rows) {
    panels.push({
      id: id++,
      type: 'row',
      title: row.title,
      collapsed: false,
      gridPos: { h: 1, w: 24, x: 0, y },
      panels: [],
    });
    y += 1;
    let x = 0;
    for (const p of row.panels) {
      const w = p.width ?? 12;
      if (x + w > 24) {
        x = 0;
        y += HEIGHT;
      }
      panels.push(panelJson(p, id++, { h: HEIGHT, w, x, y }));
      x += w;
    }
    y += HEIGHT;
  }
  return {
    annotations: {
      list: [
        {
          builtIn: 1,
          datasource: '-- Grafana --',
          enable: true,
          hide: true,
          iconColor: 'rgba(0, 211, 255, 1)',
          name: 'Annotations & Alerts',
          type: 'dashboard',
        },
      ],
    },
    description: d.description,
    editable: true,
    gnetId: null,
    graphTooltip: 1,
    id: null,
    links: [],
    panels,
    refresh: '30s',
    schemaVersion: DASHBOARD_SCHEMA_VERSION,
    style: 'dark',
    tags: [...d.tags],
    templating: {
      list: [
        {
          current: {},
          hide: 0,
          includeAll: false,
          label: 'Data source',
          multi: false,
          name: 'datasource',
          options: [],
          query: 'prometheus',
          refresh: 1,
          regex: '',
          skipUrlSync: false,
          type: 'datasource',
        },
      ],
    },
    time: { from: 'now-6h', to: 'now' },
    timepicker: {},
    timezone: '',
    title: d.title,
    uid: d.uid,
    version: 1,
  };
}

/** Every query of a dashboard spec. */
export function dashboardQueries(d: DashboardSpec): readonly PromQuery[] {
  return d.rows.flatMap((r) => r.panels.flatMap((p) => p.queries.map((q) => q.query)));
}
