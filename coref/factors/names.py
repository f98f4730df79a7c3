"""The features phi(x_i, x_j) of the pairwise coreference factor: names, groups and labels.

One definition of the feature layout, in kernel order. The compiled kernel
(``coref.factors._factors``) writes the same ``N_BASE`` base features; its own compile-time
constant (``coref.factors._factors.n_base``) is checked against :data:`N_BASE` by the tests. ``FEATURE_NAMES`` holds the
base features followed by their interactions with ``same_comp1`` (``"<name>*same_comp1"``);
``FEATURE_LABELS`` says each in words and ``FEATURE_GROUPS`` maps each to the evidence it
uses. The definitions are in :mod:`coref.encoding`.
"""

__all__ = ["BASE_FEATURES", "N_BASE", "FEATURE_NAMES", "FEATURE_LABELS", "FEATURE_GROUPS", "N_FEATURES",
           "BLOCK_SIZE_SATURATION", "COMPONENT_DAMPING", "SAME_PAPER_PENALTY"]

#: The block-size features (``log_n``, ``co_log_count_logn``) use log(min(n, BLOCK_SIZE_SATURATION)):
#: a linear weight fitted on blocks of at most a few hundred mentions (the largest shipped training
#: block has 305) is not extrapolated to blocks of thousands, where it added several nats to every
#: pair (issue 27); the size of a big block enters through the block prior instead. The compiled
#: kernel's ``N_SAT`` (``coref.factors._factors.n_saturate``) must equal it.
BLOCK_SIZE_SATURATION = 512

#: The terms that compare two coauthor components A != B as wholes (``comp_title_cos``,
#: ``comp_venue_cos``, ``comp_affil_cos``, ``comp_year_gap``, ``comp_topic_cos``) take the same
#: value on all |A| |B| pairs between them, so a sum of pairwise factors over a cluster counts
#: one comparison |A| |B| times: two big components of different authors in one field (the
#: 81- and 76-mention components of two "Wei Wang"s, issue 27) merged on thousands of
#: copies of one profile cosine.  These terms are multiplied by
#: min(1, COMPONENT_DAMPING / sqrt(|A| |B|)): unchanged up to COMPONENT_DAMPING^2 pairs, then
#: their total grows as sqrt(|A| |B|).  The compiled kernel's ``COMP_DAMP``
#: (``coref.factors._factors.comp_damping``) must equal it.
COMPONENT_DAMPING = 20

#: Two mentions of one paper (equal, known ``paper_id``) are two different authors: a paper does
#: not list one person twice (S2AND's clustering constraint, Subramanian et al. 2021). Their
#: factor is lowered by this many nats, far beyond any sum of evidence a cluster can hold (a
#: near-duplicate pair scores about +45 nats, so a cluster of 4,000 such mentions about 2e5), so
#: no sampler puts them together. It is a constraint, not a feature: the id itself is never
#: compared otherwise, and no weight is learned for it. The compiled kernel's ``SAME_PAPER``
#: (``coref.factors._factors.same_paper_penalty``) must equal it.
SAME_PAPER_PENALTY = 1_000_000

BASE_FEATURES = (
    # name, group, label
    ("co_log_count", "coauthors", "number of shared coauthors (log)"),
    ("co_jaccard", "coauthors", "share of coauthors in common (Jaccard)"),
    ("co_idf", "coauthors", "rarity-weighted shared coauthors"),
    ("co_any", "coauthors", "at least one shared coauthor"),
    ("co_missing", "coauthors", "a mention lists no coauthor"),
    ("co_two", "coauthors", "at least two shared coauthors"),
    ("title_cos", "title", "title word similarity"),
    ("venue_cos", "venue", "venue word similarity"),
    ("venue_eq", "venue", "same venue"),
    ("affil_cos", "affiliation", "affiliation word similarity"),
    ("affil_missing", "affiliation", "an affiliation is missing"),
    ("affil_eq", "affiliation", "same affiliation"),
    ("year_gap", "year", "years apart (per decade)"),
    ("year_gap2", "year", "years apart, squared"),
    ("year_missing", "year", "a year is missing"),
    ("name_compat", "name", "first names compatible"),
    ("co_log_count_logn", "coauthors", "shared coauthors, scaled by block size"),
    ("same_comp1", "coauthors", "linked through a chain of shared coauthors"),
    ("same_comp2", "coauthors", "linked through a chain of 2+ shared coauthors"),
    ("same_comp1_logsize", "coauthors", "size of the coauthor group linking them"),
    ("comp_title_cos", "title", "title similarity of their coauthor groups"),
    ("comp_venue_cos", "venue", "venue similarity of their coauthor groups"),
    ("comp_affil_cos", "affiliation", "affiliation similarity of their coauthor groups"),
    ("comp_year_gap", "year", "years between their coauthor groups"),
    ("mention_comp_title", "title", "title similarity with the other's coauthor group"),
    ("comp_logsizes", "coauthors", "sizes of their (different) coauthor groups"),
    ("same_comp_initials", "coauthors", "linked through coauthors matched by initials"),
    ("log_n", "block", "block size (log)"),
    ("comp_frac", "block", "coauthor groups per mention in the block"),
    ("title_coherence", "block", "title coherence of the block"),
    ("venue_coherence", "block", "venue coherence of the block"),
    ("affil_coherence", "block", "affiliation coherence of the block"),
    ("name_middle", "block", "share of names with a middle name in the block"),
    ("co_init_log_count", "coauthors", "coauthors shared by initial + last name (log)"),
    ("co_init_extra", "coauthors", "coauthors shared only through initials"),
    ("name_first_eq", "name", "same full first name"),
    ("name_first_conflict", "name", "different first names"),
    ("name_init_only", "name", "names agree only through an initial"),
    ("name_middle_conflict", "name", "different middle initials"),
    ("name_full_eq", "name", "same full given names"),
    ("name_rarity", "name", "rarity of the shared first name in the block"),
    ("name_init_ambiguity", "name", "full first names an initial could stand for"),
    ("abstract_cos", "abstract", "abstract word similarity"),
    ("abstract_missing", "abstract", "an abstract is missing"),
    ("keyword_cos", "keywords", "keyword similarity"),
    ("keyword_missing", "keywords", "keywords are missing"),
    ("topic_cos", "title", "topic similarity (title, venue, abstract, keywords)"),
    ("comp_topic_cos", "title", "topic similarity of their coauthor groups"),
    ("venue_acronym", "venue", "one venue is the acronym of the other"),
    ("venue_contain", "venue", "one venue name contains the other"),
    ("topic_drift", "title", "topic similarity times years apart"),
    ("co_compat_log_count", "coauthors", "coauthors matched by compatible names (log)"),
    ("co_conflict_log_count", "coauthors", "coauthor names that clash (log)"),
)
N_BASE = len(BASE_FEATURES)
FEATURE_NAMES = tuple(n for n, _, _ in BASE_FEATURES)
FEATURE_NAMES = FEATURE_NAMES + tuple(f"{name}*same_comp1" for name in FEATURE_NAMES)
#: feature name -> what it measures, in words a person understands
FEATURE_LABELS = {n: lab for n, _, lab in BASE_FEATURES}
FEATURE_LABELS.update({f"{n}*same_comp1": f"{lab} (within one coauthor group)" for n, _, lab in BASE_FEATURES})
#: feature name -> evidence group ("coauthors", "title", "venue", "affiliation", "year",
#: "name", "abstract", "keywords", "block"), to sum an explanation by group
FEATURE_GROUPS = {n: g for n, g, _ in BASE_FEATURES}
FEATURE_GROUPS.update({f"{n}*same_comp1": g for n, g, _ in BASE_FEATURES})
N_FEATURES = len(FEATURE_NAMES)
