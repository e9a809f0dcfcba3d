//! The little linear algebra least squares needs: a Householder QR factorisation of a tall matrix
//! stored by columns, and solves with its triangular factor.

/// `A = Q R` of an `n × p` matrix (`n ≥ p`), with `Q` kept as Householder reflectors.
#[derive(Clone, Debug)]
pub struct Qr {
    n: usize,
    /// The reflectors below the diagonal and `R` on and above it, by columns.
    cols: Vec<Vec<f64>>,
    /// Scale factor `2 / vᵀv` of each reflector (0 = identity).
    beta: Vec<f64>,
    /// `R`'s diagonal.
    diag: Vec<f64>,
}

impl Qr {
    /// Factorises the columns `cols` (each of length `n`).
    pub fn new(mut cols: Vec<Vec<f64>>) -> Qr {
        let p = cols.len();
        let n = cols.first().map_or(0, Vec::len);
        assert!(cols.iter().all(|c| c.len() == n), "ragged matrix");
        assert!(n >= p, "QR needs at least as many rows as columns");
        let mut beta = vec![0.0; p];
        let mut diag = vec![0.0; p];
        for j in 0..p {
            // The reflector that zeroes column j below the diagonal.
            let (head, tail) = cols.split_at_mut(j + 1);
            let c = &mut head[j];
            let norm = c[j..].iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm == 0.0 {
                diag[j] = 0.0;
                continue;
            }
            let alpha = if c[j] > 0.0 { -norm } else { norm };
            c[j] -= alpha; // v = x - alpha e1, stored in place
            let vtv: f64 = c[j..].iter().map(|x| x * x).sum();
            beta[j] = if vtv > 0.0 { 2.0 / vtv } else { 0.0 };
            diag[j] = alpha;
            for other in tail.iter_mut() {
                let dot: f64 = c[j..].iter().zip(&other[j..]).map(|(a, b)| a * b).sum();
                let f = beta[j] * dot;
                for (o, v) in other[j..].iter_mut().zip(&c[j..]) {
                    *o -= f * v;
                }
            }
        }
        Qr {
            n,
            cols,
            beta,
            diag,
        }
    }

    pub fn columns(&self) -> usize {
        self.cols.len()
    }

    /// `R[i][j]` for `i ≤ j`.
    pub fn r(&self, i: usize, j: usize) -> f64 {
        assert!(i <= j);
        if i == j {
            self.diag[j]
        } else {
            self.cols[j][i]
        }
    }

    /// `Qᵀ y`.
    pub fn qt_mul(&self, y: &[f64]) -> Vec<f64> {
        assert_eq!(y.len(), self.n);
        let mut y = y.to_vec();
        for j in 0..self.columns() {
            if self.beta[j] == 0.0 {
                continue;
            }
            let v = &self.cols[j][j..];
            let dot: f64 = v.iter().zip(&y[j..]).map(|(a, b)| a * b).sum();
            let f = self.beta[j] * dot;
            for (yi, vi) in y[j..].iter_mut().zip(v) {
                *yi -= f * vi;
            }
        }
        y
    }

    /// Solves `R x = b` for the first `p` entries of `b`.
    pub fn solve_r(&self, b: &[f64]) -> Vec<f64> {
        let p = self.columns();
        let mut x = vec![0.0; p];
        for i in (0..p).rev() {
            let mut s = b[i];
            for (k, xk) in x.iter().enumerate().skip(i + 1) {
                s -= self.r(i, k) * xk;
            }
            x[i] = s / self.diag[i];
        }
        x
    }

    /// The rows of `R⁻¹` (upper triangular), so `(AᵀA)⁻¹ = R⁻¹ R⁻ᵀ` and its diagonal entry `j`
    /// is the squared norm of row `j`.
    pub fn r_inverse(&self) -> Vec<Vec<f64>> {
        let p = self.columns();
        let mut inv = vec![vec![0.0; p]; p];
        for j in 0..p {
            // Column j of R⁻¹: solve R x = e_j.
            let mut e = vec![0.0; p];
            e[j] = 1.0;
            let x = self.solve_r(&e);
            for i in 0..p {
                inv[i][j] = x[i];
            }
        }
        inv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_an_exact_system() {
        // A = [[2, 1], [1, 3], [0, 1]] (columns below), x = (1, -2): b = A x = (0, -5, -2).
        let a = vec![vec![2.0, 1.0, 0.0], vec![1.0, 3.0, 1.0]];
        let qr = Qr::new(a);
        let x = qr.solve_r(&qr.qt_mul(&[0.0, -5.0, -2.0]));
        assert!(
            (x[0] - 1.0).abs() < 1e-12 && (x[1] + 2.0).abs() < 1e-12,
            "{x:?}"
        );
    }

    #[test]
    fn r_inverse_gives_the_inverse_of_the_normal_matrix() {
        // AᵀA for A = [[1, 0], [1, 1], [1, 2]] is [[3, 3], [3, 5]], whose inverse is
        // [[5, -3], [-3, 3]] / 6.
        let qr = Qr::new(vec![vec![1.0, 1.0, 1.0], vec![0.0, 1.0, 2.0]]);
        let inv = qr.r_inverse();
        let m = |i: usize, j: usize| (0..2).map(|k| inv[i][k] * inv[j][k]).sum::<f64>();
        assert!((m(0, 0) - 5.0 / 6.0).abs() < 1e-12);
        assert!((m(0, 1) + 3.0 / 6.0).abs() < 1e-12);
        assert!((m(1, 1) - 3.0 / 6.0).abs() < 1e-12);
    }
}
