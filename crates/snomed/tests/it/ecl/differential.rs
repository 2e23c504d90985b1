//! Random expressions on randomly generated releases: the bitmap evaluator over the store agrees with the naive
//! evaluator over plain collections.

use std::collections::BTreeSet;

use snomed::ecl_eval::{AttributeCounting, Limits, Options, concept_ids, evaluate, evaluate_with};
use snomed::{Partition, SctId};

use super::naive::Naive;
use super::release::*;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

struct Generated {
    release: Release,
    concepts: Vec<u64>,
    types: Vec<u64>,
    attribute_root: u64,
    refsets: Vec<u64>,
}

fn id(n: u64) -> u64 {
    SctId::generate(n, None, Partition::Concept).get()
}

/// A random polyhierarchy of `n` concepts with attributes in groups, a few inactive concepts and two refsets.
fn generate(seed: u64, n: usize) -> Generated {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut r = Release::default();
    let root = id(10_000);
    let attribute_root = id(10_001);
    let mut concepts = vec![root];
    let isa = |r: &mut Release, child: u64, parent: u64| {
        r.relationships.push(Rel {
            source: child,
            type_id: IS_A,
            dest: parent,
            group: 0,
            active: true,
            stated: false,
        })
    };
    r.concepts.push(Concept {
        id: root,
        active: true,
        defined: false,
        module: CORE,
        effective: 20200101,
    });
    r.concepts.push(Concept {
        id: attribute_root,
        active: true,
        defined: false,
        module: CORE,
        effective: 20200101,
    });
    r.concepts.push(Concept {
        id: IS_A,
        active: true,
        defined: false,
        module: CORE,
        effective: 20200101,
    });
    isa(&mut r, attribute_root, root);
    isa(&mut r, IS_A, attribute_root);
    let mut types = vec![IS_A];
    for t in 0..5 {
        let tid = id(10_010 + t);
        r.concepts.push(Concept {
            id: tid,
            active: true,
            defined: false,
            module: CORE,
            effective: 20200101,
        });
        // Type 1 is a subtype of type 0, so `<< type0` names two attributes.
        isa(&mut r, tid, if t == 1 { types[1] } else { attribute_root });
        types.push(tid);
    }
    let refsets = vec![id(10_100), id(10_101)];
    for &rs in &refsets {
        r.concepts.push(Concept {
            id: rs,
            active: true,
            defined: false,
            module: CORE,
            effective: 20200101,
        });
        isa(&mut r, rs, root);
    }
    let mut inactive = Vec::new();
    for i in 1..n {
        let cid = id(20_000 + i as u64);
        if rng.chance(5) {
            r.concepts.push(Concept {
                id: cid,
                active: false,
                defined: false,
                module: CORE,
                effective: 20210101,
            });
            inactive.push(cid);
            continue;
        }
        r.concepts.push(Concept {
            id: cid,
            active: true,
            defined: rng.chance(30),
            module: CORE,
            effective: 20200101,
        });
        let parents = 1 + usize::from(rng.chance(25)) + usize::from(rng.chance(5));
        let mut chosen = BTreeSet::new();
        for _ in 0..parents {
            chosen.insert(concepts[rng.below(concepts.len())]);
        }
        for p in chosen {
            isa(&mut r, cid, p);
        }
        concepts.push(cid);
    }
    for &c in &concepts[1..] {
        for _ in 0..rng.below(5) {
            let type_id = types[1 + rng.below(types.len() - 1)];
            let dest = concepts[rng.below(concepts.len())];
            r.relationships.push(Rel {
                source: c,
                type_id,
                dest,
                group: rng.below(3) as u32,
                active: true,
                stated: false,
            });
        }
        // Sometimes the same attribute again in another group (as the same finding site in two groups), the
        // case where counting per group and counting distinct values disagree.
        if rng.chance(30)
            && let Some(last) = r
                .relationships
                .last()
                .filter(|x| x.source == c && x.type_id != IS_A)
                .cloned()
        {
            r.relationships.push(Rel {
                group: last.group % 3 + 1,
                ..last
            });
        }
        if rng.chance(5) {
            let dest = concepts[rng.below(concepts.len())];
            r.relationships.push(Rel {
                source: c,
                type_id: types[2],
                dest,
                group: 0,
                active: rng.chance(50),
                stated: true,
            });
        }
    }
    for _ in 0..40 {
        let rs = refsets[rng.below(2)];
        let pool = if rng.chance(10) && !inactive.is_empty() {
            &inactive
        } else {
            &concepts
        };
        r.simple
            .push((rs, pool[rng.below(pool.len())], rng.chance(85)));
    }
    // A dangling refset member must be ignored (its component is not a concept in the release).
    r.simple.push((refsets[0], id(99_999), true));
    Generated {
        release: r,
        concepts,
        types,
        attribute_root,
        refsets,
    }
}

struct ExprGen<'g> {
    g: &'g Generated,
    rng: Rng,
    /// Reverse attributes inside groups are meaningless; none are generated there.
    in_group: bool,
}

impl ExprGen<'_> {
    fn concept(&mut self) -> String {
        self.g.concepts[self.rng.below(self.g.concepts.len())].to_string()
    }

    fn op(&mut self) -> &'static str {
        [
            "", "", "< ", "<< ", "<! ", "<<! ", "> ", ">> ", ">! ", ">>! ", "!!> ", "!!< ",
        ][self.rng.below(12)]
    }

    fn sub(&mut self, depth: u32) -> String {
        let focus = match self.rng.below(10) {
            0 if depth > 0 => format!("({})", self.expr(depth - 1)),
            1 => "*".to_owned(),
            2 => format!("^ {}", self.g.refsets[self.rng.below(2)]),
            _ => self.concept(),
        };
        let op = self.op();
        let filter = if self.rng.chance(8) {
            " {{ C active = 0 }}"
        } else {
            ""
        };
        // `!!>`/`!!<` and `>`/`>>` over `*` are fine; keep `*` unoperated to keep results meaningful.
        if focus == "*" {
            format!("*{filter}")
        } else {
            format!("{op}{focus}{filter}")
        }
    }

    fn attribute_name(&mut self) -> String {
        match self.rng.below(6) {
            0 => format!("<< {}", self.g.types[1]),
            1 => "*".to_owned(),
            _ => self.g.types[1 + self.rng.below(self.g.types.len() - 1)].to_string(),
        }
    }

    fn attribute(&mut self, depth: u32) -> String {
        let card = match self.rng.below(8) {
            0 => "[0..0] ",
            1 => "[0..1] ",
            2 => "[1..1] ",
            3 => "[2..*] ",
            _ => "",
        };
        let reverse = if !self.in_group && self.rng.chance(15) {
            "R "
        } else {
            ""
        };
        let op = if self.rng.chance(20) { "!=" } else { "=" };
        let name = self.attribute_name();
        let value = if self.rng.chance(20) {
            "*".to_owned()
        } else {
            self.sub(depth.saturating_sub(1))
        };
        format!("{card}{reverse}{name} {op} {value}")
    }

    fn attribute_set(&mut self, depth: u32) -> String {
        match self.rng.below(5) {
            0 => format!("{}, {}", self.attribute(depth), self.attribute(depth)),
            1 => format!("{} OR {}", self.attribute(depth), self.attribute(depth)),
            _ => self.attribute(depth),
        }
    }

    fn refinement(&mut self, depth: u32) -> String {
        match self.rng.below(6) {
            0 | 1 => {
                let card = ["", "[0..0] ", "[1..1] ", "[2..*] ", "[0..1] "][self.rng.below(5)];
                self.in_group = true;
                let body = self.attribute_set(depth);
                self.in_group = false;
                format!("{card}{{ {body} }}")
            }
            2 => format!("{}, {}", self.attribute(depth), self.attribute(depth)),
            3 => format!("{} OR {}", self.attribute(depth), self.attribute(depth)),
            _ => self.attribute(depth),
        }
    }

    fn expr(&mut self, depth: u32) -> String {
        match self.rng.below(8) {
            0 => format!("{} AND {}", self.sub(depth), self.sub(depth)),
            1 => format!("{} OR {}", self.sub(depth), self.sub(depth)),
            2 => format!("{} MINUS {}", self.sub(depth), self.sub(depth)),
            3 | 4 => format!("{} : {}", self.sub(depth), self.refinement(depth)),
            5 => format!("{} . {}", self.sub(depth), self.attribute_name()),
            _ => self.sub(depth),
        }
    }
}

#[test]
fn bitmap_evaluator_agrees_with_naive_walks() {
    let mut checked = 0;
    let mut non_empty = 0;
    let mut differing = 0;
    for seed in 1..=3u64 {
        let g = generate(seed, 300);
        let (_dir, store) = g.release.import();
        let mut naive = Naive::new(&g.release);
        let mut exprs = ExprGen {
            g: &g,
            rng: Rng(seed * 7919),
            in_group: false,
        };
        let _ = g.attribute_root;
        for _ in 0..300 {
            let text = exprs.expr(2);
            let tree =
                ecl::parse(&text).unwrap_or_else(|e| panic!("generated invalid ECL {text}: {e}"));
            let mut got = concept_ids(
                &store,
                &evaluate(&store, &tree, &Limits::default()).unwrap(),
            );
            got.sort_unstable();
            naive.distinct = false;
            let want: Vec<u64> = naive.eval(&tree).into_iter().collect();
            assert_eq!(got, want, "seed {seed}: {text}");
            // And counting an attribute repeated across groups once (the Hermes API's counting).
            let distinct = Options {
                counting: AttributeCounting::Distinct,
                ..Options::default()
            };
            let mut got_distinct =
                concept_ids(&store, &evaluate_with(&store, &tree, &distinct).unwrap());
            got_distinct.sort_unstable();
            naive.distinct = true;
            let want_distinct: Vec<u64> = naive.eval(&tree).into_iter().collect();
            assert_eq!(
                got_distinct, want_distinct,
                "seed {seed} (distinct): {text}"
            );
            differing += usize::from(want != want_distinct);
            checked += 1;
            non_empty += usize::from(!want.is_empty());
        }
    }
    assert!(
        non_empty * 3 > checked,
        "too few expressions select anything ({non_empty} of {checked})"
    );
    // Print how often the two countings disagreed, to see that the comparison is not vacuous.
    println!(
        "{differing} of {checked} expressions select differently when counting distinct values"
    );
}
