//! Gradient-boosted regression trees (Friedman 2001) for squared error: the estimator beyond a
//! linear model that `smtsched train compare` sets beside the regression on the same held-out
//! windows. Splits are searched over quantile bins of each feature (as LightGBM and XGBoost's
//! `hist` method do); everything is deterministic — no sampling, ties broken by feature and bin.

use crate::error::EstimateError;
use serde::{Deserialize, Serialize};

/// Settings of the boosting.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GbtParams {
    /// Number of trees.
    pub trees: usize,
    /// Depth of each tree (2^depth leaves at most).
    pub depth: usize,
    /// Shrinkage applied to every tree's output.
    pub learning_rate: f64,
    /// Fewest training windows in a leaf.
    pub min_leaf: usize,
    /// Candidate thresholds per feature (quantiles of the training data), at most 255.
    pub bins: usize,
}

impl Default for GbtParams {
    fn default() -> Self {
        GbtParams {
            trees: 200,
            depth: 3,
            learning_rate: 0.05,
            min_leaf: 100,
            bins: 64,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Node {
    /// Go to `left` if feature ≤ threshold, else to `right`.
    Split {
        feature: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
    Leaf(f64),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

impl Tree {
    pub fn predict(&self, x: &[f64]) -> f64 {
        let mut k = 0;
        loop {
            match self.nodes[k] {
                Node::Leaf(v) => return v,
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => k = if x[feature] <= threshold { left } else { right },
            }
        }
    }
}

/// A boosted ensemble: `base + Σ tree(x)` (the learning rate is folded into the leaves).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gbt {
    pub features: Vec<String>,
    pub params: GbtParams,
    pub base: f64,
    pub trees: Vec<Tree>,
}

impl Gbt {
    pub fn predict(&self, x: &[f64]) -> f64 {
        self.base + self.trees.iter().map(|t| t.predict(x)).sum::<f64>()
    }
}

/// Quantile thresholds of a column: at most `bins - 1` distinct cut points.
fn edges(col: &[f64], bins: usize) -> Vec<f64> {
    let mut v: Vec<f64> = col.to_vec();
    v.sort_by(f64::total_cmp);
    let mut out: Vec<f64> = Vec::new();
    for k in 1..bins {
        let x = v[(k * v.len() / bins).min(v.len() - 1)];
        if out.last().is_none_or(|&l| l < x) && x < v[v.len() - 1] {
            out.push(x);
        }
    }
    out
}

struct Binned {
    /// Per feature: bin of every window (window i falls in bin b if edges[b-1] < x ≤ edges[b]).
    bins: Vec<Vec<u8>>,
    edges: Vec<Vec<f64>>,
}

fn bin_columns(cols: &[Vec<f64>], bins: usize) -> Binned {
    let edges: Vec<Vec<f64>> = cols.iter().map(|c| edges(c, bins)).collect();
    let bins = cols
        .iter()
        .zip(&edges)
        .map(|(c, e)| {
            c.iter()
                .map(|&x| e.partition_point(|&t| t < x) as u8)
                .collect()
        })
        .collect();
    Binned { bins, edges }
}

/// Fits `params.trees` trees to `y` from the columns `cols` (named `names`).
pub fn fit(
    cols: &[Vec<f64>],
    names: &[String],
    y: &[f64],
    params: &GbtParams,
) -> Result<Gbt, EstimateError> {
    let n = y.len();
    if n == 0 {
        return Err(EstimateError::Empty("no windows to fit".into()));
    }
    if !(2..=256).contains(&params.bins) || params.depth == 0 || params.min_leaf == 0 {
        return Err(EstimateError::Invalid(format!(
            "gradient boosting: bins must be 2-256, depth and min-leaf at least 1 (got {params:?})"
        )));
    }
    if !(params.learning_rate > 0.0 && params.learning_rate <= 1.0) {
        return Err(EstimateError::Invalid(format!(
            "--learning-rate {}: must be in (0, 1]",
            params.learning_rate
        )));
    }
    let binned = bin_columns(cols, params.bins);
    let base = y.iter().sum::<f64>() / n as f64;
    let mut pred = vec![base; n];
    let mut trees = Vec::with_capacity(params.trees);
    let all: Vec<u32> = (0..n as u32).collect();
    for _ in 0..params.trees {
        let resid: Vec<f64> = y.iter().zip(&pred).map(|(a, b)| a - b).collect();
        let mut nodes = Vec::new();
        grow(&binned, &resid, &all, params.depth, params, &mut nodes);
        let tree = Tree { nodes };
        for (i, p) in pred.iter_mut().enumerate() {
            *p += leaf_of(&tree, &binned, i);
        }
        trees.push(tree);
    }
    Ok(Gbt {
        features: names.to_vec(),
        params: *params,
        base,
        trees,
    })
}

/// A training window's leaf value (by its bins, which agrees with thresholds on raw values).
fn leaf_of(t: &Tree, b: &Binned, i: usize) -> f64 {
    let mut k = 0;
    loop {
        match t.nodes[k] {
            Node::Leaf(v) => return v,
            Node::Split {
                feature,
                threshold,
                left,
                right,
            } => {
                let bin = b.bins[feature][i] as usize;
                let goes_left = bin < b.edges[feature].len() && b.edges[feature][bin] <= threshold;
                k = if goes_left { left } else { right };
            }
        }
    }
}

/// Grows a node over windows `idx`; returns its index in `nodes`.
fn grow(
    b: &Binned,
    resid: &[f64],
    idx: &[u32],
    depth: usize,
    params: &GbtParams,
    nodes: &mut Vec<Node>,
) -> usize {
    let me = nodes.len();
    let sum: f64 = idx.iter().map(|&i| resid[i as usize]).sum();
    let count = idx.len();
    nodes.push(Node::Leaf(params.learning_rate * sum / count as f64));
    if depth == 0 || count < 2 * params.min_leaf {
        return me;
    }
    // Best split: (gain, feature, last bin on the left).
    let mut best: Option<(f64, usize, usize)> = None;
    let parent = sum * sum / count as f64;
    for (f, fb) in b.bins.iter().enumerate() {
        let nb = b.edges[f].len() + 1;
        if nb < 2 {
            continue;
        }
        let mut s = vec![0.0; nb];
        let mut c = vec![0usize; nb];
        for &i in idx {
            let k = fb[i as usize] as usize;
            s[k] += resid[i as usize];
            c[k] += 1;
        }
        let (mut sl, mut cl) = (0.0, 0usize);
        for k in 0..nb - 1 {
            sl += s[k];
            cl += c[k];
            let cr = count - cl;
            if cl < params.min_leaf || cr < params.min_leaf {
                continue;
            }
            let sr = sum - sl;
            let gain = sl * sl / cl as f64 + sr * sr / cr as f64 - parent;
            if best.is_none_or(|(g, _, _)| gain > g) {
                best = Some((gain, f, k));
            }
        }
    }
    let Some((gain, f, k)) = best else { return me };
    if gain <= 1e-12 {
        return me;
    }
    let (left_idx, right_idx): (Vec<u32>, Vec<u32>) = idx
        .iter()
        .partition(|&&i| (b.bins[f][i as usize] as usize) <= k);
    let left = grow(b, resid, &left_idx, depth - 1, params, nodes);
    let right = grow(b, resid, &right_idx, depth - 1, params, nodes);
    nodes[me] = Node::Split {
        feature: f,
        threshold: b.edges[f][k],
        left,
        right,
    };
    me
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_split_finds_a_step() {
        // y is 1 below x = 0.5 and 3 above it; one tree of depth 1 with learning rate 1 recovers
        // the step exactly.
        let x: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
        let y: Vec<f64> = x.iter().map(|&v| if v < 0.5 { 1.0 } else { 3.0 }).collect();
        let p = GbtParams {
            trees: 1,
            depth: 1,
            learning_rate: 1.0,
            min_leaf: 1,
            bins: 100,
        };
        let g = fit(&[x], &["x".into()], &y, &p).unwrap();
        assert_eq!(g.base, 2.0);
        assert_eq!(g.predict(&[0.2]), 1.0);
        assert_eq!(g.predict(&[0.7]), 3.0);
        match g.trees[0].nodes[0] {
            Node::Split { threshold, .. } => assert_eq!(threshold, 0.49),
            _ => panic!("no split"),
        }
    }

    #[test]
    fn boosting_reduces_training_error_and_fits_an_interaction() {
        // y = a × b on a grid: no linear model fits it; depth-2 trees do.
        let mut a = Vec::new();
        let mut b = Vec::new();
        let mut y = Vec::new();
        for i in 0..20 {
            for j in 0..20 {
                a.push(i as f64);
                b.push(j as f64);
                y.push(i as f64 * j as f64);
            }
        }
        let sse = |g: &Gbt| -> f64 {
            (0..y.len())
                .map(|k| (y[k] - g.predict(&[a[k], b[k]])).powi(2))
                .sum()
        };
        let p = GbtParams {
            trees: 10,
            depth: 2,
            learning_rate: 0.5,
            min_leaf: 5,
            bins: 32,
        };
        let names = ["a".to_string(), "b".to_string()];
        let g10 = fit(&[a.clone(), b.clone()], &names, &y, &p).unwrap();
        let g100 = fit(
            &[a.clone(), b.clone()],
            &names,
            &y,
            &GbtParams { trees: 100, ..p },
        )
        .unwrap();
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        let total: f64 = y.iter().map(|v| (v - mean).powi(2)).sum();
        assert!(sse(&g10) < 0.5 * total, "{} vs {total}", sse(&g10));
        assert!(
            sse(&g100) < 0.2 * sse(&g10),
            "{} vs {}",
            sse(&g100),
            sse(&g10)
        );
        assert!(sse(&g100) < 0.1 * total);
        // The same data give the same trees.
        assert_eq!(fit(&[a, b], &names, &y, &p).unwrap(), g10);
    }

    #[test]
    fn bad_settings_are_rejected() {
        let p = GbtParams {
            bins: 1,
            ..GbtParams::default()
        };
        assert!(fit(&[vec![1.0, 2.0]], &["x".into()], &[1.0, 2.0], &p).is_err());
        assert!(fit(&[vec![]], &["x".into()], &[], &GbtParams::default()).is_err());
    }
}
