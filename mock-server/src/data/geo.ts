/**
 * Geospatial queries (docs/decisions/0048-geospatial-queries.md): `$geoWithin` (a GeoJSON polygon,
 * `$centerSphere`, and the legacy `$box`, `$polygon`, `$center`), `$geoIntersects`, and the
 * distances `$near`, `$nearSphere` and the `$geoNear` stage order by. Locations are GeoJSON
 * geometries or legacy coordinate pairs (`[x, y]`, `{lng, lat}`), as MongoDB reads them;
 * spherical distances are great-circle distances on MongoDB's Earth (radius 6,378.1 km), planar
 * ones Euclidean in the pairs' units. Polygon edges are straight lines in longitude and latitude
 * (MongoDB's are great-circle arcs: the two part only near the edges of large polygons).
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { isDocument } from "./documents.ts";
import { doubleOf, isNumeric } from "./numeric-operators.ts";
import { heavy, steps } from "./query-limits.ts";
import { keysOf } from "./wide-keys.ts";

/** MongoDB's radius of the Earth, in meters (kRadiusOfEarthInMeters). */
export const earthRadiusMeters = 6_378_100;

export type Position = [number, number];

export type Geometry =
  | { type: "Point"; coordinates: Position }
  | { type: "MultiPoint"; coordinates: Position[] }
  | { type: "LineString"; coordinates: Position[] }
  | { type: "MultiLineString"; coordinates: Position[][] }
  | { type: "Polygon"; coordinates: Position[][] }
  | { type: "MultiPolygon"; coordinates: Position[][][] }
  | { type: "GeometryCollection"; geometries: Geometry[] };

/** A location as a query reads a document's: a geometry, whether it was a legacy pair, and the value it was. */
export interface Located {
  geometry: Geometry;
  legacy: boolean;
  source: unknown;
}

const numeric = (value: unknown): value is number => isNumeric(value);

/** A legacy pair: an array of two numbers or a document whose first two fields are numbers. */
function legacyPair(value: unknown): Position | null {
  if (Array.isArray(value)) {
    if (value.length < 2 || !numeric(value[0]) || !numeric(value[1])) return null;
    return [doubleOf(value[0]), doubleOf(value[1])];
  }
  if (isDocument(value) && !("type" in value)) {
    const keys = keysOf(value);
    if (keys.length < 2) return null;
    const x = value[keys[0]!];
    const y = value[keys[1]!];
    return numeric(x) && numeric(y) ? [doubleOf(x), doubleOf(y)] : null;
  }
  return null;
}

/** A GeoJSON position, checked as MongoDB checks a point's coordinates. */
function position(value: unknown): Position {
  if (!Array.isArray(value) || value.length < 2 || !value.every(numeric))
    throw errors.mongo("Point must only contain numeric elements");
  const lng = doubleOf(value[0]);
  const lat = doubleOf(value[1]);
  if (lng < -180 || lng > 180 || lat < -90 || lat > 90)
    throw errors.mongo(`longitude/latitude is out of bounds, lng: ${lng} lat: ${lat}`);
  return [lng, lat];
}

const positions = (value: unknown): Position[] => {
  if (!Array.isArray(value)) throw errors.mongo("GeoJSON coordinates must be an array");
  return value.map(position);
};

function ring(value: unknown): Position[] {
  const points = positions(value);
  if (points.length < 4) throw errors.mongo("Loop must have at least 3 different vertices");
  const [first, last] = [points[0]!, points[points.length - 1]!];
  if (first[0] !== last[0] || first[1] !== last[1]) throw errors.mongo("Loop is not closed");
  return points;
}

/** A GeoJSON geometry, checked; null when `value` is no GeoJSON object. */
export function geoJson(value: unknown): Geometry | null {
  if (!isDocument(value) || typeof value.type !== "string") return null;
  const c = value.coordinates;
  switch (value.type) {
    case "Point":
      return { type: "Point", coordinates: position(c) };
    case "MultiPoint":
      return { type: "MultiPoint", coordinates: positions(c) };
    case "LineString": {
      const line = positions(c);
      if (line.length < 2) throw errors.mongo("GeoJSON LineString must have at least 2 vertices");
      return { type: "LineString", coordinates: line };
    }
    case "MultiLineString":
      if (!Array.isArray(c)) throw errors.mongo("GeoJSON coordinates must be an array");
      return { type: "MultiLineString", coordinates: c.map(positions) };
    case "Polygon":
      if (!Array.isArray(c) || c.length === 0) throw errors.mongo("Polygon coordinates must be an array");
      return { type: "Polygon", coordinates: c.map(ring) };
    case "MultiPolygon":
      if (!Array.isArray(c)) throw errors.mongo("GeoJSON coordinates must be an array");
      return {
        type: "MultiPolygon",
        coordinates: c.map((polygon) => {
          if (!Array.isArray(polygon)) throw errors.mongo("Polygon coordinates must be an array");
          return polygon.map(ring);
        }),
      };
    case "GeometryCollection": {
      const members = value.geometries;
      if (!Array.isArray(members)) throw errors.mongo("GeometryCollection geometries must be an array");
      return { type: "GeometryCollection", geometries: members.map((g) => geoJson(g) ?? unknownShape(g)) };
    }
    default:
      return unknownShape(value);
  }
}

function unknownShape(value: unknown): never {
  throw errors.mongo(`unknown GeoJSON type: ${JSON.stringify(isDocument(value) ? value.type : value)}`);
}

/** The locations a document's value holds: a geometry, a legacy pair, or an array of them. */
export function locationsOf(value: unknown): Located[] {
  const pair = legacyPair(value);
  if (pair) return [{ geometry: { type: "Point", coordinates: pair }, legacy: true, source: value }];
  if (isDocument(value)) {
    try {
      const geometry = geoJson(value);
      return geometry ? [{ geometry, legacy: false, source: value }] : [];
    } catch {
      // A stored value that is no valid GeoJSON is no location (MongoDB's query skips it).
      return [];
    }
  }
  if (Array.isArray(value))
    return value.flatMap((element) => (Array.isArray(element) || isDocument(element) ? locationsOf(element) : []));
  return [];
}

// ---------------------------------------------------------------------------------------------
// Measures

const radians = (degrees: number) => (degrees * Math.PI) / 180;

/** The great-circle angle between two positions, in radians (haversine). */
export function sphericalRadians(a: Position, b: Position): number {
  const dLat = radians(b[1] - a[1]);
  const dLng = radians(b[0] - a[0]);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(radians(a[1])) * Math.cos(radians(b[1])) * Math.sin(dLng / 2) ** 2;
  return 2 * Math.asin(Math.min(1, Math.sqrt(h)));
}

export const planarDistance = (a: Position, b: Position) => Math.hypot(a[0] - b[0], a[1] - b[1]);

/** Every position of a geometry. */
export function verticesOf(geometry: Geometry): Position[] {
  switch (geometry.type) {
    case "Point":
      return [geometry.coordinates];
    case "MultiPoint":
    case "LineString":
      return geometry.coordinates;
    case "MultiLineString":
    case "Polygon":
      return geometry.coordinates.flat();
    case "MultiPolygon":
      return geometry.coordinates.flat(2);
    case "GeometryCollection":
      return geometry.geometries.flatMap(verticesOf);
  }
}

/** Whether a position is inside a ring (ray casting; the boundary counts as inside). */
function inRing(point: Position, loop: Position[]): boolean {
  let inside = false;
  const [x, y] = point;
  for (let i = 0, j = loop.length - 1; i < loop.length; j = i++) {
    const [xi, yi] = loop[i]!;
    const [xj, yj] = loop[j]!;
    if (onSegment(point, loop[i]!, loop[j]!)) return true;
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/** Whether a position is inside a polygon: in its outer ring, in none of its holes. */
function inPolygon(point: Position, polygon: Position[][]): boolean {
  const [outer, ...holes] = polygon;
  if (!outer || !inRing(point, outer)) return false;
  return !holes.some((hole) => inRing(point, hole) && !onRing(point, hole));
}

const onRing = (point: Position, loop: Position[]) => loop.some((p, i) => i > 0 && onSegment(point, loop[i - 1]!, p));

function onSegment(p: Position, a: Position, b: Position): boolean {
  const cross = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]);
  if (Math.abs(cross) > 1e-12) return false;
  return (
    Math.min(a[0], b[0]) - 1e-12 <= p[0] &&
    p[0] <= Math.max(a[0], b[0]) + 1e-12 &&
    Math.min(a[1], b[1]) - 1e-12 <= p[1] &&
    p[1] <= Math.max(a[1], b[1]) + 1e-12
  );
}

function segmentsCross(a: Position, b: Position, c: Position, d: Position): boolean {
  const orient = (p: Position, q: Position, r: Position) =>
    Math.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]));
  const o1 = orient(a, b, c);
  const o2 = orient(a, b, d);
  const o3 = orient(c, d, a);
  const o4 = orient(c, d, b);
  if (o1 !== o2 && o3 !== o4) return true;
  return onSegment(c, a, b) || onSegment(d, a, b) || onSegment(a, c, d) || onSegment(b, c, d);
}

/** The polygons of an area geometry (a Polygon, a MultiPolygon), else none. */
const polygonsOf = (geometry: Geometry): Position[][][] =>
  geometry.type === "Polygon" ? [geometry.coordinates] : geometry.type === "MultiPolygon" ? geometry.coordinates : [];

/** The segments of a geometry's lines and rings. */
function segmentsOf(geometry: Geometry): [Position, Position][] {
  const lines: Position[][] =
    geometry.type === "LineString"
      ? [geometry.coordinates]
      : geometry.type === "MultiLineString" || geometry.type === "Polygon"
        ? geometry.coordinates
        : geometry.type === "MultiPolygon"
          ? geometry.coordinates.flat()
          : geometry.type === "GeometryCollection"
            ? geometry.geometries.flatMap((g) => segmentsOf(g).map(([a, b]) => [a, b]))
            : [];
  return lines.flatMap((line) => line.slice(1).map((p, i) => [line[i]!, p] as [Position, Position]));
}

/** The vertices of an area's rings: what testing one point against it costs. */
const ringVertices = (area: Geometry) => polygonsOf(area).reduce((n, polygon) => n + polygon.flat().length, 0);

/** Whether a geometry lies within an area (every vertex inside it). */
export function withinArea(geometry: Geometry, area: Geometry): boolean {
  const polygons = polygonsOf(area);
  const vertices = verticesOf(geometry);
  // Each test walks the area's rings: counted, so a large area over large locations meets the deadline.
  steps((vertices.length * ringVertices(area)) >> 4);
  return vertices.every((p) => polygons.some((polygon) => inPolygon(p, polygon)));
}

/** Whether two geometries share a point. */
export function intersects(a: Geometry, b: Geometry): boolean {
  if (a.type === "GeometryCollection") return a.geometries.some((g) => intersects(g, b));
  if (b.type === "GeometryCollection") return b.geometries.some((g) => intersects(a, g));
  const aPolygons = polygonsOf(a);
  const bPolygons = polygonsOf(b);
  if (verticesOf(a).some((p) => bPolygons.some((polygon) => inPolygon(p, polygon)))) return true;
  if (verticesOf(b).some((p) => aPolygons.some((polygon) => inPolygon(p, polygon)))) return true;
  const aSegments = segmentsOf(a);
  const bSegments = segmentsOf(b);
  steps((aSegments.length * bSegments.length + verticesOf(a).length * ringVertices(b)) >> 4);
  if (aSegments.some(([p, q]) => bSegments.some(([r, s]) => segmentsCross(p, q, r, s)))) return true;
  const aPoints = a.type === "Point" || a.type === "MultiPoint" ? verticesOf(a) : [];
  const bPoints = b.type === "Point" || b.type === "MultiPoint" ? verticesOf(b) : [];
  if (aPoints.some((p) => bSegments.some(([r, s]) => onSegment(p, r, s)))) return true;
  if (bPoints.some((p) => aSegments.some(([r, s]) => onSegment(p, r, s)))) return true;
  return aPoints.some((p) => bPoints.some((q) => p[0] === q[0] && p[1] === q[1]));
}

// ---------------------------------------------------------------------------------------------
// `$geoWithin` shapes

/** A query's geometry weighed once, when the query is compiled: a large one runs in a worker. */
export function weighShape(geometry: Geometry, operator: string): void {
  heavy(verticesOf(geometry).length * 16, operator);
}

/** A `$geoWithin` operand: the test it puts to each location. */
export function withinShape(operand: unknown): (located: Located) => boolean {
  if (!isDocument(operand) || keysOf(operand).length === 0) throw errors.mongo("$geoWithin not an object");
  const [shape] = keysOf(operand);
  const spec = operand[shape!];
  switch (shape) {
    case "$geometry": {
      const area = geoJson(spec);
      if (!area || (area.type !== "Polygon" && area.type !== "MultiPolygon"))
        throw errors.mongo(`$geoWithin not supported with provided geometry: ${JSON.stringify(spec)}`);
      weighShape(area, "$geoWithin");
      return ({ geometry }) => withinArea(geometry, area);
    }
    case "$centerSphere": {
      const [center, radius] = circle(spec, "$centerSphere");
      return ({ geometry }) => verticesOf(geometry).every((p) => sphericalRadians(center, p) <= radius);
    }
    case "$center": {
      const [center, radius] = circle(spec, "$center");
      return ({ geometry }) => verticesOf(geometry).every((p) => planarDistance(center, p) <= radius);
    }
    case "$box": {
      if (!Array.isArray(spec) || spec.length !== 2) throw errors.mongo("Point must be an array or object");
      const [a, b] = spec.map((corner) => legacyPair(corner) ?? badPoint());
      const [minX, maxX] = [Math.min(a![0], b![0]), Math.max(a![0], b![0])];
      const [minY, maxY] = [Math.min(a![1], b![1]), Math.max(a![1], b![1])];
      return ({ geometry }) => verticesOf(geometry).every(([x, y]) => x >= minX && x <= maxX && y >= minY && y <= maxY);
    }
    case "$polygon": {
      if (!Array.isArray(spec) || spec.length < 3) throw errors.mongo("Polygon must have at least 3 points");
      const loop = spec.map((p) => legacyPair(p) ?? badPoint());
      const closed = [...loop, loop[0]!];
      weighShape({ type: "LineString", coordinates: closed }, "$geoWithin");
      return ({ geometry }) => verticesOf(geometry).every((p) => inRing(p, closed));
    }
    default:
      throw errors.mongo(`unknown geo specifier: ${shape}`);
  }
}

function badPoint(): never {
  throw errors.mongo("Point must only contain numeric elements");
}

function circle(spec: unknown, name: string): [Position, number] {
  if (!Array.isArray(spec) || spec.length !== 2) throw errors.mongo(`${name} must be an array of [center, radius]`);
  const center = legacyPair(spec[0]) ?? badPoint();
  if (!numeric(spec[1]) || doubleOf(spec[1]) < 0) throw errors.mongo("radius must be a non-negative number");
  return [center, doubleOf(spec[1])];
}

// ---------------------------------------------------------------------------------------------
// Nearness

/** A point to measure from, and how: meters on the sphere, radians on it, or planar units. */
export interface Nearness {
  point: Position;
  measure: "meters" | "radians" | "planar";
  min?: number;
  max?: number;
}

/** The distance of a location from the point, in the nearness's measure (the nearest vertex's). */
export function distanceOf(located: Located, near: Nearness): number {
  let best = Number.POSITIVE_INFINITY;
  for (const p of verticesOf(located.geometry)) {
    const d =
      near.measure === "planar"
        ? planarDistance(near.point, p)
        : sphericalRadians(near.point, p) * (near.measure === "meters" ? earthRadiusMeters : 1);
    if (d < best) best = d;
  }
  return best;
}

const distanceBound = (value: unknown, name: string): number | undefined => {
  if (value === undefined) return undefined;
  if (!numeric(value) || doubleOf(value) < 0) throw errors.mongo(`${name} must be a non-negative number`);
  return doubleOf(value);
};

/** A `$near`/`$nearSphere` operand (with its sibling `$maxDistance`/`$minDistance`, legacy form). */
export function nearnessOf(operator: "$near" | "$nearSphere", condition: Record<string, unknown>): Nearness {
  const operand = condition[operator];
  if (isDocument(operand) && "$geometry" in operand) {
    const geometry = geoJson(operand.$geometry);
    if (geometry?.type !== "Point") throw errors.mongo(`invalid point in geo near query $geometry argument`);
    return {
      point: geometry.coordinates,
      measure: "meters",
      min: distanceBound(operand.$minDistance, "$minDistance"),
      max: distanceBound(operand.$maxDistance, "$maxDistance"),
    };
  }
  const point = legacyPair(operand);
  if (!point) throw errors.mongo(`${operator} must be a point`);
  return {
    point,
    measure: operator === "$nearSphere" ? "radians" : "planar",
    min: distanceBound(condition.$minDistance, "$minDistance"),
    max: distanceBound(condition.$maxDistance, "$maxDistance"),
  };
}

/** Whether a distance is within a nearness's bounds. */
export const withinBounds = (distance: number, near: Nearness) =>
  (near.min === undefined || distance >= near.min) && (near.max === undefined || distance <= near.max);
