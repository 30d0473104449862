/**
 * Geospatial queries (geo.ts, query-engine.ts; docs/decisions/0048-geospatial-queries.md):
 * `$geoWithin` of every shape, `$geoIntersects`, `$near`/`$nearSphere` finds ordered by distance
 * within their bounds, the `$geoNear` stage, over GeoJSON points and legacy coordinate pairs.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { aggregate, find } from "../../src/data/query-engine.ts";

// Central London: the places' distances from Trafalgar Square are 783, 3,610 and 3,614 m.
const trafalgar = [-0.128, 51.508];
const places = [
  { _id: "eye", loc: { type: "Point", coordinates: [-0.1196, 51.5033] } },
  { _id: "tower", loc: { type: "Point", coordinates: [-0.0759, 51.5081] } },
  { _id: "museum", loc: { type: "Point", coordinates: [-0.1769, 51.4967] } },
  { _id: "nowhere" },
  { _id: "legacy", pos: [2, 2] },
  {
    _id: "pairs",
    pos: [
      [10, 10],
      [3, 1],
    ],
  },
  {
    _id: "park",
    area: {
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [4, 0],
          [4, 4],
          [0, 4],
          [0, 0],
        ],
      ],
    },
  },
];

function ids(query: unknown, options: { sort?: unknown; limit?: number } = {}): unknown {
  try {
    const found = find(fromEJSON(places) as Document[], fromEJSON(query) as Document, {
      ...(options.sort ? { sort: options.sort as Document } : {}),
      ...(options.limit !== undefined ? { limit: options.limit } : {}),
    });
    return found.map((doc) => doc._id);
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}

const near = (max?: number, min?: number) => ({
  loc: {
    $near: {
      $geometry: { type: "Point", coordinates: trafalgar },
      ...(max !== undefined ? { $maxDistance: max } : {}),
      ...(min !== undefined ? { $minDistance: min } : {}),
    },
  },
});

describe("$near and $nearSphere", () => {
  it("order a find's matches by distance, in meters for GeoJSON, within the bounds", () => {
    expect(ids(near())).toEqual(["eye", "tower", "museum"]);
    expect(ids(near(3612))).toEqual(["eye", "tower"]);
    expect(ids(near(3612, 1000))).toEqual(["tower"]);
    expect(ids(near(), { limit: 1 })).toEqual(["eye"]);
    expect(ids({ $and: [near(), { _id: { $ne: "eye" } }] })).toEqual(["tower", "museum"]);
  });

  it("let a sort of the find's own order the matches instead", () => {
    expect(ids(near(5000), { sort: { _id: -1 } })).toEqual(["tower", "museum", "eye"]);
  });

  it("measure legacy pairs in their units, or in radians on the sphere", () => {
    expect(ids({ pos: { $near: [3, 3], $maxDistance: 2.5 } })).toEqual(["legacy", "pairs"]);
    expect(ids({ pos: { $near: [3, 3], $maxDistance: 1.5 } })).toEqual(["legacy"]);
    // (3, 1) is 0.0247 radians from (2, 2) on the sphere.
    expect(ids({ pos: { $nearSphere: [2, 2], $maxDistance: 0.03 } })).toEqual(["legacy", "pairs"]);
    expect(ids({ pos: { $nearSphere: [2, 2], $maxDistance: 0.02 } })).toEqual(["legacy"]);
  });

  it("are refused where nothing orders by them, and twice in one query", () => {
    expect(() => aggregate(fromEJSON(places) as Document[], [{ $match: fromEJSON(near()) as Document }])).toThrow(
      "$geoNear, $near, and $nearSphere are not allowed in this context",
    );
    expect(ids({ ...near(), pos: { $near: [0, 0] } })).toBe("ERR Too many geoNear expressions");
  });
});

describe("$geoWithin", () => {
  it("takes a GeoJSON polygon, a sphere around a point, and the legacy shapes", () => {
    const thames = {
      type: "Polygon",
      coordinates: [
        [
          [-0.13, 51.5],
          [-0.07, 51.5],
          [-0.07, 51.51],
          [-0.13, 51.51],
          [-0.13, 51.5],
        ],
      ],
    };
    expect(ids({ loc: { $geoWithin: { $geometry: thames } } })).toEqual(["eye", "tower"]);
    // 2 km on MongoDB's Earth, in radians.
    expect(ids({ loc: { $geoWithin: { $centerSphere: [trafalgar, 2000 / 6378100] } } })).toEqual(["eye"]);
    expect(
      ids({
        pos: {
          $geoWithin: {
            $box: [
              [0, 0],
              [5, 5],
            ],
          },
        },
      }),
    ).toEqual(["legacy", "pairs"]);
    expect(ids({ pos: { $geoWithin: { $center: [[0, 0], 3] } } })).toEqual(["legacy"]);
    expect(
      ids({
        pos: {
          $geoWithin: {
            $polygon: [
              [0, 0],
              [4, 0],
              [0, 4],
            ],
          },
        },
      }),
    ).toEqual(["legacy", "pairs"]);
    expect(
      ids({
        area: {
          $geoWithin: {
            $box: [
              [-1, -1],
              [5, 5],
            ],
          },
        },
      }),
    ).toEqual(["park"]);
  });

  it("refuses an unknown shape and coordinates off the globe", () => {
    expect(ids({ loc: { $geoWithin: { $circle: [[0, 0], 1] } } })).toBe("ERR unknown geo specifier: $circle");
    expect(
      ids({
        loc: {
          $geoWithin: {
            $geometry: {
              type: "Polygon",
              coordinates: [
                [
                  [0, 0],
                  [200, 0],
                  [0, 1],
                  [0, 0],
                ],
              ],
            },
          },
        },
      }),
    ).toBe("ERR longitude/latitude is out of bounds, lng: 200 lat: 0");
  });
});

describe("$geoIntersects", () => {
  it("finds the locations that share a point with a geometry", () => {
    expect(ids({ area: { $geoIntersects: { $geometry: { type: "Point", coordinates: [1, 1] } } } })).toEqual(["park"]);
    expect(
      ids({
        area: {
          $geoIntersects: {
            $geometry: {
              type: "LineString",
              coordinates: [
                [-1, 2],
                [9, 2],
              ],
            },
          },
        },
      }),
    ).toEqual(["park"]);
    expect(ids({ area: { $geoIntersects: { $geometry: { type: "Point", coordinates: [9, 9] } } } })).toEqual([]);
  });
});

describe("the $geoNear stage", () => {
  const run = (pipeline: unknown[]) => {
    try {
      return toEJSON(aggregate(fromEJSON(places) as Document[], fromEJSON(pipeline) as Document[]));
    } catch (error) {
      return `ERR ${(error as Error).message}`;
    }
  };

  it("writes each document's distance, nearest first, from the one field holding locations or `key`", () => {
    const out = run([
      {
        $geoNear: {
          near: { type: "Point", coordinates: trafalgar },
          distanceField: "dist.m",
          key: "loc",
          maxDistance: 3000,
          query: { _id: { $ne: "tower" } },
        },
      },
      { $project: { dist: { $round: ["$dist.m", -2] } } },
    ]);
    expect(out).toEqual([{ _id: "eye", dist: { $numberInt: "800" } }]);
    expect(
      run([
        { $geoNear: { near: [3, 3], distanceField: "d", key: "pos", includeLocs: "at" } },
        { $project: { d: 1, at: 1 } },
      ]),
    ).toEqual([
      { _id: "legacy", d: { $numberDouble: "1.4142135623730951" }, at: [{ $numberInt: "2" }, { $numberInt: "2" }] },
      {
        _id: "pairs",
        // (An integral double is written as an int: the number model of decision 0040.)
        d: { $numberInt: "2" },
        // The location measured from: the pair of the array that is nearest.
        at: [{ $numberInt: "3" }, { $numberInt: "1" }],
      },
    ]);
  });

  it("is refused past the first stage, without a distance field, or among several location fields", () => {
    expect(run([{ $match: {} }, { $geoNear: { near: [0, 0], distanceField: "d" } }])).toBe(
      "ERR $geoNear is only valid as the first stage in a pipeline",
    );
    expect(run([{ $geoNear: { near: [0, 0] } }])).toBe("ERR $geoNear requires a 'distanceField' option as a String");
    expect(String(run([{ $geoNear: { near: [0, 0], distanceField: "d" } }]))).toMatch(
      /^ERR There is more than one 2d or 2dsphere index/,
    );
  });
});
