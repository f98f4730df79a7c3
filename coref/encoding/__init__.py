"""Mention encoding for the pairwise coreference factor.

A block of mentions (rows of the DataFrame of ``coref.load_mentions``) is turned
into an :class:`EncodedBlock`: integer / float numpy arrays only (CSR token lists
with weights, ids, years, name codes, dense topic vectors), so that the compiled
kernel (``coref.factors._factors``, ``coref.gibbs._gibbs``) evaluates one factor
f_theta(x_i, x_j) without touching a Python object.

Features phi(x_i, x_j) (``coref.factors.names.FEATURE_NAMES``, in kernel order;
``FEATURE_LABELS`` says each in words, ``FEATURE_GROUPS`` maps each to the evidence it uses):

====  ======================  ===========================================================
 k    name                    definition
====  ======================  ===========================================================
 0    co_log_count            log(1 + number of shared coauthors)
 1    co_jaccard              shared / union of the two coauthor sets
 2    co_idf                  sum of block-local IDF weights of the shared coauthors
 3    co_any                  1 if at least one shared coauthor
 4    co_missing              1 if either mention has no coauthors
 5    co_two                  1 if at least two shared coauthors
 6    title_cos               cosine of TF-IDF title-word vectors
 7    venue_cos               cosine of TF-IDF venue-word vectors
 8    venue_eq                1 if the normalised venue strings are equal (and present)
 9    affil_cos               cosine of TF-IDF affiliation-word vectors (0 if missing)
 10   affil_missing           1 if either affiliation is missing
 11   affil_eq                1 if the normalised affiliations are equal
 12   year_gap                min(|year_i - year_j|, 30) / 10 (0 if missing)
 13   year_gap2               year_gap ** 2
 14   year_missing            1 if either year is missing
 15   name_compat             1 same full first name, 0.5 compatible (or missing), 0 otherwise
 16   co_log_count_logn       co_log_count * log(min(block size, 512))
 17   same_comp1              1 if i, j are in one coauthor group: connected in the block's
                              shared-coauthor graph (groups of > 200 mentions split, thin
                              groups cut: below)
 18   same_comp2              same, for the graph whose edges need >= 2 shared coauthors
 19   same_comp1_logsize      same_comp1 * log(size of that component)
 20   comp_title_cos          cosine of the title profiles of the two comp1 components (*)
 21   comp_venue_cos          same for venue words (profiles: top words, summed TF-IDF) (*)
 22   comp_affil_cos          same for affiliation words (all three are 1 within one component) (*)
 23   comp_year_gap           gap between the year ranges of the two components / 10 (cap 3) (*)
 24   mention_comp_title      mean cosine of each mention's title with the other's component
                              title profile (1 within one component)
 25   comp_logsizes           log |comp(i)| + log |comp(j)| for different components (else 0)
 26   same_comp_initials      same_comp1 with coauthors keyed by first initial + last name
 27   log_n                   log(min(block size, 512))            (block constant)
 28   comp_frac               number of comp1 components / n       (block constant)
 29   title_coherence         squared norm of the mean title vector ~ mean pairwise title cosine
 30   venue_coherence         same for venue vectors               (block constant)
 31   affil_coherence         same for affiliation vectors (mentions with one) (block constant)
 32   name_middle             fraction of names with 3+ parts      (block constant)
 33   co_init_log_count       log(1 + shared coauthors keyed by first initial + last name)
 34   co_init_extra           co_init_log_count - co_log_count (matches through initials only)
 35   name_first_eq           1 if both full first names are present and equal (or the whole
                              given names are: "Jian Xin" / "Jianxin")
 36   name_first_conflict     1 if the first names (or their initials) are present and differ
 37   name_init_only          1 if the names agree only through an initial ("J." vs "Jie")
 38   name_middle_conflict    1 if both have a second given initial and they differ
 39   name_full_eq            1 if the whole given names (all parts, hyphens dropped) are equal
 40   name_rarity             -log(share of the block's mentions with that first name) if
                              name_first_eq, else 0 (the smaller of the two readings)
 41   name_init_ambiguity     log(1 + distinct full first names with that initial in the block)
                              if name_init_only, else 0
 42   abstract_cos            cosine of TF-IDF abstract-word vectors (0 if missing)
 43   abstract_missing        1 if either mention has no abstract
 44   keyword_cos             cosine of TF-IDF keyword vectors (0 if missing)
 45   keyword_missing         1 if either mention has no keywords
 46   topic_cos               cosine of LSA topic vectors (title, venue, abstract, keywords)
 47   comp_topic_cos          cosine of the mean topic vectors of the two comp1 components (*)
 48   venue_acronym           1 if one venue's acronym is a word of the other venue
 49   venue_contain           1 if one venue's words are all in the other's (not equal)
 50   topic_drift             topic_cos * year_gap (topic agreement across the years apart)
 51   co_compat_log_count     log(1 + coauthors matched by initial + last name whose full
                              first names do not conflict)
 52   co_conflict_log_count   log(1 + coauthors with one initial + last name but different
                              full first names)
 53+k <name>*same_comp1       feature k times same_comp1 (separate weights inside a component)
====  ======================  ===========================================================

(*) Damped for two big components A, B: multiplied by min(1, 20 / sqrt(|A| |B|))
(:data:`coref.factors.names.COMPONENT_DAMPING`). These terms depend on the two components
only, so a cluster holding both counts one comparison on each of the |A| |B| pairs; beyond
400 pairs their total grows as sqrt(|A| |B|) instead of |A| |B|.

No feature grows with the block beyond what training blocks showed (issue 27): ``log_n``
saturates at 512 mentions (:data:`coref.factors.names.BLOCK_SIZE_SATURATION`), and a
shared-coauthor component of more than :data:`coref.encoding.components.MAX_GROUP` (200)
mentions, which in a big one-name block chains strangers through common coauthor names,
is split into its ``comp2`` parts, then single mentions
(:func:`coref.encoding.components.bounded_groups`). A group whose coauthor graph is thin (two
circles joined by a few shared coauthors, as two same-named people who both wrote with one famous
colleague) is cut where it is thin, by spectral bisection while the cut's conductance is below
0.03 (:func:`coref.encoding.components.cut_thin_groups`). Every ``comp1`` feature uses these
groups (:func:`coref.encoding.components.coauthor_groups`).

Word IDF and the LSA topic vectors come from a :class:`Vocabulary` fitted on a corpus
of mentions (:mod:`coref.encoding.vocabulary`). Coauthor IDF is block-local,
``log((1 + n) / (1 + df)) + 1``. The optional columns ``abstract`` (str or NA) and
``keywords`` (list of str) may be absent; a missing value is never matched (indicator
features instead). A vocabulary records the input fields its corpus held
(``Vocabulary.fields``); encoding with it blanks every other field first
(:func:`coref.encoding.mentions.neutral_mentions`, one ``IgnoredFieldsWarning`` per field),
so a field the model never learned changes neither its own features nor the topic vectors.

Modules, each importing only those above it:

* :mod:`coref.encoding.text`: normalisation and words of the text fields;
* :mod:`coref.encoding.names`: person-name parsing (initials, coauthor keys, acronyms);
* :mod:`coref.encoding.vocabulary`: :class:`Vocabulary`, the fitted TF-IDF / LSA statistics;
* :mod:`coref.encoding.components`: shared-token components of mentions (scipy);
* :mod:`coref.encoding.mentions`: :class:`MentionEncoding`, :func:`encode_parts`;
* :mod:`coref.encoding.blocks`: :class:`EncodedBlock`, :func:`assemble_block`,
  :func:`assemble_blocks`, :func:`block_components`, :func:`encode_mentions`
  (kernel ``coref.encoding._assemble``, pure-numpy twin ``coref.encoding._assemble_py``).
"""
from coref.encoding.blocks import EncodedBlock, assemble_block, assemble_blocks, block_components, encode_mentions
from coref.encoding.cache import EncodingCache
from coref.encoding.components import token_components
from coref.encoding.mentions import MentionEncoding, encode_parts
from coref.encoding.text import words
from coref.encoding.vocabulary import Vocabulary

__all__ = [
    "EncodingCache",
    "EncodedBlock",
    "MentionEncoding",
    "Vocabulary",
    "assemble_block",
    "assemble_blocks",
    "block_components",
    "encode_mentions",
    "encode_parts",
    "token_components",
    "words",
]
