// Figures for the notes page: how many notes the caller has, how many words they hold, and when
// the newest one changed. Runs as the calling user, so the notes rules apply.
exports = async () => {
  const notes = context.services.get("mongodb-atlas").db("notes-app").collection("notes");
  const [stats] = await notes
    .aggregate([
      { $match: { owner_id: context.user.id } },
      {
        $group: {
          _id: null,
          count: { $sum: 1 },
          // Words: runs of non-space characters (an empty body has none).
          words: { $sum: { $size: { $regexFindAll: { input: { $ifNull: ["$body", ""] }, regex: "\\S+" } } } },
          lastUpdated: { $max: "$updatedAt" },
        },
      },
    ])
    .toArray();
  return {
    count: stats ? stats.count : 0,
    words: stats ? stats.words : 0,
    lastUpdated: stats ? stats.lastUpdated : null,
  };
};
